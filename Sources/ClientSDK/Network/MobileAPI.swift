import Foundation
import SurveyWire
import Transport

/// Form requests to the study server's mobile API, with the credentials and device fields every request carries.
struct MobileAPI: Sendable {
    let client: any HTTPTransport
    let configuration: SurveyClientConfiguration

    func path(_ endpoint: String) -> String {
        configuration.platform == .ios && endpoint != "set_fcm_token"
            ? "\(configuration.serverURL)/\(endpoint)/ios" : "\(configuration.serverURL)/\(endpoint)"
    }

    /// The fields every request carries, with the receipts (`notification_uuids`) not yet confirmed, as Beiwe's iOS app
    /// sends them.
    func baseForm(state: ClientState) -> FormBody {
        var form = FormBody([
            ("patient_id", configuration.patientID), ("password", state.passwordHash), ("device_id", state.deviceID),
            ("timezone", configuration.timeZone), ("version_code", SurveyClient.sdkVersion), ("version_name", SurveyClient.sdkVersion),
            ("os_version", configuration.osVersion),
        ])
        if let receipts = state.pendingReceipts, !receipts.isEmpty, let text = try? WireJSON.encode(receipts) {
            form["notification_uuids"] = String(decoding: text, as: UTF8.self)
        }
        return form
    }

    /// POSTs a form; network failures become `transport` errors.
    func post(_ endpoint: String, _ form: FormBody) async throws(SurveyClientError) -> TransportResponse {
        do {
            return try await client.send(.form(path(endpoint), form.encoded()))
        } catch {
            throw SurveyClientError.transport(endpoint, error)
        }
    }

    /// POSTs an upload: multipart on iOS (as the iOS app does), urlencoded on Android.
    func upload(_ form: FormBody) async throws(SurveyClientError) -> TransportResponse {
        do {
            if configuration.platform == .ios {
                let boundary = "survey-sdk-" + UUID().uuidString
                let parts = form.fields.map { MultipartForm.Part(name: $0.name, filename: $0.name == "file" ? form["file_name"] : nil, body: Array($0.value.utf8)) }
                return try await client.send(.multipart(path("upload"), boundary: boundary, body: MultipartForm(parts: parts).encoded(boundary: boundary)))
            }
            return try await client.send(.form(path("upload"), form.encoded()))
        } catch {
            throw SurveyClientError.transport("upload", error)
        }
    }

    /// A short excerpt of a response body for an error message: an HTML page becomes its title, anything else its
    /// first 200 characters on one line (a failed call once wrote a whole 341 kB page into its error).
    static func excerpt(_ response: TransportResponse) -> String {
        let text = response.text
        if let open = text.range(of: "<title>", options: .caseInsensitive),
           let close = text.range(of: "</title>", options: .caseInsensitive, range: open.upperBound..<text.endIndex) {
            return "HTML page: " + text[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let line = text.replacingOccurrences(of: "\n", with: " ").trimmingCharacters(in: .whitespaces)
        return line.count > 200 ? String(line.prefix(200)) + "…" : line
    }

    /// The `{"error": {...}}` code of a response, if it has one.
    static func errorCode(_ response: TransportResponse) -> String? {
        (try? response.decode(ErrorBody.self))?.error.code
    }
}
