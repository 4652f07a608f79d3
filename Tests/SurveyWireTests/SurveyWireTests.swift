import Foundation
import Testing
@testable import SurveyWire

@Suite struct FormBodyTests {
    @Test func lastDuplicateWinsLikeDjango() {
        let form = FormBody(parsing: "patient_id=a&device_id=1&os_version=9&device_id=2")
        #expect(form["device_id"] == "2")
        #expect(form["patient_id"] == "a")
    }

    @Test func keepsUnescapedAndroidValues() {
        // Android writes base64url padding and file text without escaping.
        let form = FormBody(parsing: "password=abc=&file=AAA=:BBB=\nCC:DD%zz")
        #expect(form["password"] == "abc=")
        #expect(form["file"] == "AAA=:BBB=\nCC:DD%zz")
    }

    @Test func encodesAndDecodes() {
        var form = FormBody()
        form["a b"] = "x+y/z=&%"
        form["empty"] = ""
        let parsed = FormBody(parsing: form.encoded())
        #expect(parsed["a b"] == "x+y/z=&%")
        #expect(parsed["empty"] == "")
        #expect(FormBody(parsing: "q=a+b%20c")["q"] == "a b c")
    }

    @Test func everyByteIsEncodedAsRFC3986SaysAndDecodesBack() {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        for byte in UInt8(0)...UInt8(127) {
            let text = String(decoding: [byte], as: UTF8.self)
            let expected = unreserved.contains(byte) ? text : "%" + String(format: "%02X", byte)
            #expect(FormBody.encode(text) == expected, "byte \(byte)")
            #expect(FormBody.decode(FormBody.encode(text)) == text)
        }
        // Multi-byte UTF-8 is escaped byte by byte; text without anything to escape comes back as it was.
        #expect(FormBody.encode("é 🙂") == "%C3%A9%20%F0%9F%99%82")
        #expect(FormBody.encode("poZOszmw4fbgDXUpOohAq_BposD-gublOvasCZeTwdU") == "poZOszmw4fbgDXUpOohAq_BposD-gublOvasCZeTwdU")
        #expect(FormBody.encode("") == "")
        #expect(FormBody.decode(FormBody.encode("tok-ÄÖ é 🙂 &=+%")) == "tok-ÄÖ é 🙂 &=+%")
    }
}

@Suite struct MultipartTests {
    @Test func roundTrip() throws {
        let form = MultipartForm(parts: [
            .init(name: "patient_id", body: Array("abc".utf8)),
            .init(name: "file", filename: "x.csv", contentType: "text/csv", body: Array("line1\r\nline2".utf8)),
        ])
        let body = form.encoded(boundary: "XyZ")
        let parsed = try MultipartForm(parsing: body, boundary: "XyZ")
        #expect(parsed.parts == form.parts)
        #expect(parsed.asForm()["file"] == "line1\r\nline2")
        #expect(MultipartForm.boundary(fromContentType: "multipart/form-data; boundary=\"XyZ\"") == "XyZ")
    }

    @Test func rejectsTruncatedBodies() {
        let body = Array("--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue".utf8)
        #expect(throws: MultipartForm.ParseError.self) { try MultipartForm(parsing: body, boundary: "B") }
        #expect(throws: MultipartForm.ParseError.self) { try MultipartForm(parsing: Array("nothing".utf8), boundary: "B") }
    }
}

@Suite struct WireTimeTests {
    @Test func formatsAndParsesUTC() {
        let date = Date(timeIntervalSince1970: 1_777_902_300)  // 2026-05-04T13:45:00Z
        #expect(WireTime.format(date) == "2026-05-04T13:45:00Z")
        #expect(WireTime.parse("2026-05-04T13:45:00Z") == date)
        #expect(WireTime.parse("2026-05-04T08:45:00-05:00") == date)
        #expect(WireTime.parse("2026-05-04T13:45:00.250Z") == date.addingTimeInterval(0.25))
        #expect(WireTime.beiweSentTime(date) == "2026-05-04T13:45:00")
    }

    @Test(arguments: ["", "2026-05-04", "2026-02-30T00:00:00Z", "2026-05-04T13:45:00", "2026-05-04T25:00:00Z", "2026-05-04T13:45:00Zjunk"])
    func rejectsMalformed(_ text: String) {
        #expect(WireTime.parse(text) == nil)
    }

    @Test func handlesDatesBeforeTheEpoch() {
        #expect(WireTime.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
    }

    @Test func formatsEveryYearAsPrintfWould() {
        // 5,000 instants from year 1 to 9999 (a fixed seed), with and without milliseconds, against printf-style text.
        var generator = SeededGenerator(seed: 0x7715)
        for _ in 0..<5_000 {
            let millis = Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &generator)
            let date = Date(timeIntervalSince1970: Double(millis) / 1000)
            let whole = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
            let seconds = whole >= 0 ? whole / 1000 : (whole - 999) / 1000
            let (y, mo, d, h, mi, s) = WireTime.civil(seconds)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", y, mo, d, h, mi, s)
            #expect(WireTime.format(date) == expected + "Z")
            #expect(WireTime.format(date, milliseconds: true) == expected + String(format: ".%03d", Int(whole - seconds * 1000)) + "Z")
        }
    }

    @Test func httpDatesMatchFoundationsIMFFixdate() {
        // The servers' `Date` header and the SDK's ping uploads: 2,000 instants from 1900 to 2200 (a fixed seed),
        // before the epoch included, against DateFormatter's RFC 9110 form.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SeededGenerator(seed: 0x9110)
        for _ in 0..<2_000 {
            let date = Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800...7_258_118_400, using: &generator)))
            #expect(WireTime.httpDate(date) == formatter.string(from: date))
        }
        #expect(WireTime.httpDate(Date(timeIntervalSince1970: 1_795_975_200)) == "Sun, 29 Nov 2026 18:00:00 GMT")
    }
}

@Suite struct SurveyPushTests {
    @Test func dataFieldsAreBeiwesStrings() throws {
        let push = SurveyPush(surveyIDs: ["s1", "s2"], sentTime: "2026-05-04T14:00:00", nonce: String(repeating: "a", count: 32),
                              surveyUUIDs: ["s1": ["u1"], "s2": ["u2", "u3"]])
        let data = push.dataFields()
        #expect(data["type"] == "survey")
        #expect(data["survey_ids"] == "[\"s1\",\"s2\"]")
        #expect(try SurveyPush(dataFields: data) == push)
        #expect(push.allUUIDs == ["u1", "u2", "u3"])
    }

    @Test func toleratesWhatCrashesTheIOSApp() throws {
        let push = try SurveyPush(dataFields: ["type": "survey", "survey_ids": "[\"s\"]", "sent_time": "garbage", "survey_uuids_dict": "{"])
        #expect(push.surveyIDs == ["s"])
        #expect(push.surveyUUIDs.isEmpty)
        #expect(throws: WireFormatError.self) { try SurveyPush(dataFields: ["type": "message"]) }
        #expect(throws: WireFormatError.self) { try SurveyPush(dataFields: ["type": "survey", "survey_ids": "nope"]) }
    }

    @Test func extractsDataFromAPNsAndFCMPayloads() {
        let apns: JSONValue = ["aps": ["alert": "x"], "type": "survey", "survey_ids": "[]"]
        #expect(SurveyPush.dataFields(fromRelayPayload: apns) == ["type": "survey", "survey_ids": "[]"])
        let fcm: JSONValue = ["type": "survey", "nonce": "n", "notification": ["title": "t"]]
        #expect(SurveyPush.dataFields(fromRelayPayload: fcm) == ["type": "survey", "nonce": "n"])
    }
}

@Suite struct CSVTests {
    @Test func answersRoundTripWithCommasAndQuotes() throws {
        let answers = [
            SurveyAnswer(questionID: "q1", questionType: "radio_button", questionText: "Pick, one", answerOptions: "[a; b]", answer: "a"),
            SurveyAnswer(questionID: "q2", questionType: "free_response", questionText: "Say \"hi\"", answer: " spaced "),
        ]
        let lines = SurveyAnswersCSV.lines(for: answers)
        #expect(lines[0] == SurveyAnswersCSV.header)
        #expect(try SurveyAnswersCSV.parse(lines: lines) == answers)
    }

    @Test func rejectsForeignFiles() {
        #expect(throws: WireFormatError.self) { try SurveyAnswersCSV.parse(lines: ["timestamp,accel"]) }
        #expect(throws: WireFormatError.self) { try SurveyAnswersCSV.parse(lines: [SurveyAnswersCSV.header, "a,b"]) }
        #expect(throws: WireFormatError.self) { try CSV.parseRow("\"unterminated") }
    }
}

@Suite struct ReadyLineTests {
    @Test func parsesTheProtocolLine() {
        let line = ReadyLine.parse("READY {\"service\": \"mock-server\", \"url\": \"http://127.0.0.1:5000\", \"pid\": 42}")
        #expect(line == ReadyLine(service: "mock-server", url: "http://127.0.0.1:5000", pid: 42))
        #expect(ReadyLine.parse(line!.line()) == line)
        #expect(ReadyLine.parse("READY") == nil)
        #expect(ReadyLine.parse("log line") == nil)
    }
}

@Suite struct CompactJSONTests {
    /// The relay's hand-written message text is what WireJSON's encoder writes.
    @Test func relayMessagesMatchTheEncoder() throws {
        let messages = [
            RelayWire.Message(id: "m1", payload: ["type": "survey", "survey_ids": "[\"a\"]", "url": "https://x/y"], priority: 10,
                              collapseID: nil, pushType: nil, sentAt: 1_790_000_000_123),
            RelayWire.Message(id: "m2", payload: ["aps": ["alert": ["title": "Hi \"you\"", "body": "line\nbreak\ttab\\"], "badge": 3,
                                                          "content-available": 1], "n": 1.5, "big": 12345678901, "neg": -2,
                                                  "list": [true, false, .null, ["k": "é ☃"]]],
                              priority: nil, collapseID: "c/1", pushType: "alert", sentAt: 0),
            RelayWire.Message(id: "m3", payload: [:], priority: 5, collapseID: "", pushType: "voip", sentAt: 42),
        ]
        for message in messages {
            #expect(message.compactText == (try WireJSON.encodeString(message)))
            #expect(try WireJSON.decode(RelayWire.Message.self, from: message.compactText) == message)
        }
        #expect(JSONValue.string("\u{01}").compactText == "\"\\u0001\"")
    }
}

/// SplitMix64: a reproducible source for property tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
