import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The relay's TLS identity for its APNs port: a certificate for `127.0.0.1`, `::1`, `localhost` and the `--host`
/// name, issued by a CA made at start (served at `GET /__control/tls/ca.pem`, for clients to trust), or the
/// `--tls-cert`/`--tls-key` files given.
package struct RelayTLS: Sendable {
    /// The CA a client must trust (PEM); nil when the certificate came from files.
    package let caPEM: String?
    /// The server's certificate chain and key, for NIOSSL.
    package let configuration: TLSConfiguration
    /// The CA's key and name, to issue a certificate for a host the proxy answers for (nil with files).
    private let issuer: Issuer?

    struct Issuer: Sendable {
        let key: P256.Signing.PrivateKey
        let name: DistinguishedName

        /// A server configuration with a fresh P-256 key and a certificate from this CA for `names` (valid a year), the
        /// one recipe for the TLS port's certificate and each of the proxy's.
        func serverConfiguration(commonName: String, names: [GeneralName]) throws -> TLSConfiguration {
            let now = Date()
            let leafKey = P256.Signing.PrivateKey()
            let leaf = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
                notValidBefore: now - 3600, notValidAfter: now + 365 * 86400, issuer: name,
                subject: try DistinguishedName { CommonName(commonName) },
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([.serverAuth])
                    SubjectAlternativeNames(names)
                },
                issuerPrivateKey: .init(key))
            let chain = try NIOSSLCertificate(bytes: Array(try leaf.serializeAsPEM().pemString.utf8), format: .pem)
            let privateKey = try NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem)
            return .makeServerConfiguration(certificateChain: [.certificate(chain)], privateKey: .privateKey(privateKey))
        }
    }

    private init(caPEM: String?, configuration: TLSConfiguration, issuer: Issuer? = nil) {
        self.issuer = issuer
        self.caPEM = caPEM
        var configuration = configuration
        // A connection closed by the server (a graceful stop) waits this long for the client's close_notify, not
        // NIOSSL's default 5 s: the stop must end within PROTOCOL.md §6's second.
        configuration.shutdownTimeout = .milliseconds(200)
        self.configuration = configuration
    }

    /// An identity from a CA made now (a P-256 key; the CA and the certificate are valid for a year).
    package static func generated(host: String) throws -> RelayTLS {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("survey-trio")
            CommonName("survey-trio push-relay test CA")
        }
        let ca = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(caKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 365 * 86400, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(caKey))
        var names: [GeneralName] = [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                                    .ipAddress(ASN1OctetString(contentBytes: ArraySlice([UInt8](repeating: 0, count: 15) + [1])))]
        if host != "127.0.0.1" && host != "::1" && host != "localhost" {
            names.append(Self.ipBytes(host).map { .ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) } ?? .dnsName(host))
        }
        let issuer = Issuer(key: caKey, name: caName)
        return RelayTLS(caPEM: try ca.serializeAsPEM().pemString + "\n",
                        configuration: try issuer.serverConfiguration(commonName: host, names: names), issuer: issuer)
    }

    /// A server configuration whose certificate, from this CA, names `host` (the proxy's leaf for `fcm.googleapis.com`
    /// and the other providers' hosts), with ALPN `h2` and `http/1.1`. Nil when the identity came from files: there is
    /// no CA key to issue with.
    package func configuration(forHost host: String) throws -> TLSConfiguration? {
        guard let issuer else { return nil }
        var configuration = try issuer.serverConfiguration(commonName: host, names: [.dnsName(host)])
        configuration.shutdownTimeout = .milliseconds(200)
        configuration.applicationProtocols = ["h2", "http/1.1"]
        return configuration
    }

    /// An identity from PEM files (`--tls-cert`, `--tls-key`).
    package static func files(certificate: String, key: String) throws -> RelayTLS {
        let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
        let privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
        return RelayTLS(caPEM: nil, configuration: .makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(privateKey)))
    }

    /// The bytes of an IPv4 or IPv6 address, when `text` is one.
    static func ipBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
