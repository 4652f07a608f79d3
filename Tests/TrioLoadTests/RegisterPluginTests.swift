import Synchronization
import SurveyWire
import Testing
import Transport
@testable import TrioLoad

/// ``RegisterPlugin``'s requests: the form encoded once per participant sends the same fields as the one built at
/// every iteration.
@Suite struct RegisterPluginTests {
    /// Keeps every request and answers 200.
    final class Capture: HTTPTransport {
        let requests = Mutex<[TransportRequest]>([])
        func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
            requests.withLock { $0.append(request) }
            return TransportResponse(status: 200, headers: [], body: Array("{}".utf8))
        }
        func eventStream(_ request: TransportRequest) async throws(TransportError) -> TransportClient.EventStream {
            throw TransportError(code: "unsupported", message: "no streams here")
        }
        var forms: [FormBody] { requests.withLock { $0.map { FormBody(parsingBytes: $0.body ?? []) } } }
    }

    static let people = [AdminWire.Credentials(patientID: "p 1&x=y", password: "pass+word/é"),
                         AdminWire.Credentials(patientID: "p2", password: "pw2")]

    static func options() -> RegisterLoadOptions {
        RegisterLoadOptions(server: "http://127.0.0.1:9", participants: people, model: .closed(concurrency: 1), duration: .seconds(1),
                            timeZone: "America/Chicago")
    }

    @Test func theFormEncodedOnceSendsTheFieldsBuiltAtEachIteration() async {
        let precomputed = Capture()
        let plugin = RegisterPlugin(options: Self.options(), http: precomputed)
        #expect(plugin.forms.count == 2)
        let recorder = LoadRecorder(measuredFrom: .now, windowEnd: .now + .seconds(60))
        for index in 0..<4 { _ = await plugin.iterate(index, recorder: recorder) }
        let builtEachTime = Capture()
        for index in 0..<4 {
            let who = Self.people[index % 2]
            _ = await RegisterLoad.registerDevice(Self.options(), http: builtEachTime, who: who, index: index, timeZone: "America/Chicago")
        }
        let sent = precomputed.forms
        #expect(sent.count == 4)
        #expect(sent == builtEachTime.forms)
        #expect(sent[3]["device_id"] == "load-device-3" && sent[1]["patient_id"] == "p2")
        #expect(sent[0]["patient_id"] == "p 1&x=y" && sent[0]["new_password"] == "pass+word/é" && sent[0]["fcm_token"] == "load-p 1&x=y")
        #expect(sent[0]["timezone"] == "America/Chicago" && sent[0]["phone_number"] == "NOT_SUPPLIED")
        #expect(sent[0]["password"] == plugin.hashes[0] && sent[1]["password"] == plugin.hashes[1])
    }

    @Test func withARelayTheFormIsBuiltAtEachIteration() {
        var options = Self.options()
        options.relay = "http://127.0.0.1:9"
        #expect(RegisterPlugin(options: options, http: Capture()).forms.isEmpty)
    }
}
