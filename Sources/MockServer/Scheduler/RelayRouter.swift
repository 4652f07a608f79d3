import Foundation
import Logging
import SurveyWire
import Synchronization
import Transport

/// Picks the relay for a push among the `--relay-url`s. With one relay every push goes there. With several, the token's
/// node id (``RelayNode``) names the relay that issued it; each relay's node id is learnt from its `/__control/health`
/// (asked again whenever a token names a node not seen yet, so a relay started late or restarted is found).
final class RelayRouter: Sendable {
    let urls: [String]
    private let client: TransportClient
    private let logger: Logger
    /// Node id → base URL, as the relays reported them.
    private let nodes = Mutex<[Int: String]>([:])

    init(urls: [String], client: TransportClient, logger: Logger) {
        self.urls = urls
        self.client = client
        self.logger = logger
    }

    /// The relay for `token`, or why there is none.
    func url(for token: String) async -> Result<String, Failure> {
        guard let only = urls.first else { return .failure(Failure("no relay URL configured")) }
        if urls.count == 1 { return .success(only) }
        guard let node = RelayNode.node(of: token) else {
            return .failure(Failure("the token carries no relay node id, and \(urls.count) relays are configured"))
        }
        if let known = nodes.withLock({ $0[node] }) { return .success(known) }
        await refresh()
        if let known = nodes.withLock({ $0[node] }) { return .success(known) }
        return .failure(Failure("no relay among --relay-url reports node id \(node)"))
    }

    /// Asks every relay its node id.
    func refresh() async {
        let found = await withTaskGroup(of: (String, Int?).self) { group in
            for url in urls {
                group.addTask {
                    var request = TransportRequest(url: url + "/__control/health")
                    request.timeout = .seconds(2)
                    let response = try? await self.client.send(request)
                    let node = response.flatMap { $0.status == 200 ? try? $0.decode(JSONValue.self) : nil }?["node_id"]?.stringValue.flatMap { Int($0) }
                    return (url, node)
                }
            }
            var out: [(String, Int?)] = []
            for await pair in group { out.append(pair) }
            return out
        }
        nodes.withLock { map in
            for case (let url, let node?) in found {
                if let other = map[node], other != url {
                    logger.warning("two relays report the same node id; the first is used", metadata: ["node_id": "\(node)", "kept": "\(other)", "ignored": "\(url)"])
                    continue
                }
                map[node] = url
            }
        }
        for (url, node) in found where node == nil {
            logger.warning("relay did not report its node id", metadata: ["relay_url": "\(url)"])
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
