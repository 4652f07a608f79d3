import Foundation
import Histogram
import SurveyWire
import Testing
import Transport
@testable import TrioLoad
import TrioTesting

/// A stand-in Beiwe server without the trio's admin API (IntegrationTests/Fixtures/standin-server.py), answering
/// registrations after `delayMs`.
func withStandIn<T>(delayMs: Int, options: [String] = [], _ body: (String) async throws -> T) async throws -> T {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/standin-server.py")
    let log = temporaryDirectory("standin").appendingPathComponent("standin.log")
    let server = try await ServerProcess.launch(executable: URL(fileURLWithPath: "/usr/bin/env"),
                                                arguments: ["python3", script.path, String(delayMs)] + options, logFile: log)
    do {
        let result = try await body(server.url)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

extension Integration {
/// The load tool's report: honest against servers that are not ours, right about throughput, reproducible, mergeable.
@Suite(.timeLimit(.minutes(2))) struct LoadReportTests {
    static let people = (0..<200).map { AdminWire.Credentials(patientID: "p\($0)", password: "pw") }

    /// Defect 1: a server without the admin API is not a failed correctness pass; `--verify auto` skips it and says so.
    @Test func aServerWithoutTheAdminAPIIsNotAFalseFailure() async throws {
        try await withStandIn(delayMs: 0) { url in
            let http = TransportClient()
            defer { http.shutdown() }
            var options = RegisterLoadOptions(server: url, participants: Self.people, model: .closed(concurrency: 4), duration: .milliseconds(500))
            let report = try await RegisterLoad.run(options, http: http) { _ in }
            #expect(report.totals.succeeded > 0 && report.totals.failed == 0)
            #expect(report.correct == nil)
            #expect(report.correctness?.contains("no admin API") == true)
            options.verify = .on
            let strict = try await RegisterLoad.run(options, http: http) { _ in }
            #expect(strict.correct == false)
            // The CLI: exit 0 with the notice (it exited 99 with 0 errors before), and a participants file without study_id.
            let file = temporaryDirectory("standin-load").appendingPathComponent("p.json")
            try Data(#"{"participants": [{"patient_id": "a1", "password": "pw"}, {"patient_id": "a2", "password": "pw"}]}"#.utf8).write(to: file)
            #expect(try await LoadToolTests.surveyCLI(["load", "register", "--server", url, "--participants-file", file.path,
                                                 "--concurrency", "2", "--duration", "300ms"]) == 0)
            #expect(try await LoadToolTests.surveyCLI(["load", "register", "--server", url, "--participants-file", file.path,
                                                 "--concurrency", "2", "--duration", "300ms", "--verify", "on"]) == 99)
        }
    }

    /// Issue 54, against a server that is not ours: `--header` reaches it on every request (behind a gateway that wants
    /// a key, the run without it fails 401), `--timezones` spreads the participants over the zones given, and a 200
    /// whose body is not the route's JSON (a gateway's login page) is an error of its own, `register_user:not_json`.
    @Test func headersZonesAndResponseChecksAgainstAServerThatIsNotOurs() async throws {
        let record = temporaryDirectory("standin-record").appendingPathComponent("forms.jsonl")
        let file = temporaryDirectory("standin-load").appendingPathComponent("p.json")
        try Data(#"{"participants": [{"patient_id": "a1", "password": "pw"}, {"patient_id": "a2", "password": "pw"}, {"patient_id": "a3", "password": "pw"}]}"#.utf8)
            .write(to: file)
        let report = temporaryDirectory("standin-report").appendingPathComponent("r.json")
        try await withStandIn(delayMs: 0, options: ["--require-header", "X-Gateway-Key: k1", "--record", record.path]) { url in
            let base = ["load", "register", "--server", url, "--participants-file", file.path, "--concurrency", "1", "--duration", "300ms",
                        "--report", report.path]
            #expect(try await LoadToolTests.surveyCLI(base + ["--threshold", "errors<1%"]) == 99, "without the key every registration is refused")
            let refused = try WireJSON.decode(LoadReport.self, from: Data(contentsOf: report))
            #expect(refused.errors.keys.sorted() == ["register_user:401"], "\(refused.errors)")
            #expect(refused.errorSamples?["register_user:401"]?.contains("Unauthorized") == true)
            try? FileManager.default.removeItem(at: record)
            #expect(try await LoadToolTests.surveyCLI(base + ["--header", "X-Gateway-Key: k1", "--timezones", "America/Chicago,Europe/Berlin",
                                                        "--threshold", "errors<1%"]) == 0)
            let passed = try WireJSON.decode(LoadReport.self, from: Data(contentsOf: report))
            #expect(passed.totals.failed == 0 && passed.totals.succeeded > 0)
            #expect(passed.run?.options["header"] == "X-Gateway-Key", "the report names the header, never its value")
            let forms = try String(contentsOf: record, encoding: .utf8).split(separator: "\n").map { try WireJSON.decode([String: String].self, from: String($0)) }
            let zones = Dictionary(forms.map { ($0["patient_id"] ?? "", $0["timezone"] ?? "") }, uniquingKeysWith: { a, _ in a })
            #expect(zones == ["a1": "America/Chicago", "a2": "Europe/Berlin", "a3": "America/Chicago"], "\(zones)")
        }
        try await withStandIn(delayMs: 0, options: ["--html-200"]) { url in
            #expect(try await LoadToolTests.surveyCLI(["load", "register", "--server", url, "--participants-file", file.path, "--concurrency", "1",
                                                 "--duration", "300ms", "--report", report.path]) == 0)
            let html = try WireJSON.decode(LoadReport.self, from: Data(contentsOf: report))
            #expect(html.totals.succeeded == 0 && html.errors.keys.sorted() == ["register_user:not_json"], "\(html.errors)")
            // What the gateway said is kept: one sample body per kind of error.
            #expect(html.errorSamples?["register_user:not_json"]?.contains("Please sign in") == true, "\(String(describing: html.errorSamples))")
        }
        // Bad flags are refused with the flag named.
        for bad in [["--header", "no colon"], ["--header", "Host: x"], ["--timezones", "Mars/Olympus"]] {
            #expect(try await LoadToolTests.surveyCLI(["load", "register", "--server", "http://127.0.0.1:9", "--participants-file", file.path,
                                                 "--concurrency", "1"] + bad) == 64, "\(bad)")
        }
    }

    /// Defect 3: against a slow server (200 ms per registration) at 20/s for 2 s, throughput counts completions inside
    /// the window over the window (the drain does not dilute it), and rows are by completion time with the drain after.
    @Test func openModelThroughputAndRowsAgainstASlowServer() async throws {
        try await withStandIn(delayMs: 200) { url in
            let http = TransportClient()
            defer { http.shutdown() }
            let options = RegisterLoadOptions(server: url, participants: Self.people, model: .open(RateSchedule(constant: 20), maxInFlight: 100),
                                              duration: .seconds(2))
            let report = try await RegisterLoad.run(options, http: http) { _ in }
            let totals = report.totals
            #expect(totals.started >= 39 && totals.started <= 41)
            #expect(totals.succeeded == totals.started)
            // About 1.8 s of the 2 s window produced completions: ≈ 36 of 40.
            let completed = try #require(totals.completedInWindow)
            #expect(completed >= 30 && completed < totals.succeeded, "\(completed) of \(totals.succeeded) completed inside the window")
            #expect(abs(totals.throughput - Double(completed) / 2) < 0.001)
            #expect(abs((totals.offeredRate ?? 0) - Double(totals.started) / 2) < 0.001)
            #expect((totals.drainSeconds ?? 0) > 0.1)
            // Rows by completion time: none in the first 200 ms, the drain in second 2, and they add up.
            #expect(report.perSecond.map(\.succeeded).reduce(0, +) == totals.succeeded)
            let drain = try #require(report.perSecond.first { $0.second == 2 })
            #expect(drain.succeeded > 0 && (drain.started ?? 0) == 0)
            #expect(report.perSecond.allSatisfy { $0.succeeded == 0 || $0.p50 >= 200 })
            #expect(report.latencyMs.p50 >= 200)
        }
    }

    /// Issue 36: a cancelled run ends at once with a partial report. The pacing loop's cancelled sleep returned at once,
    /// so the rest of a 20 s schedule (360 registrations) went out in a burst before the run ended.
    @Test func aCancelledRunEndsAtOnceWithAPartialReport() async throws {
        try await withStandIn(delayMs: 0) { url in
            let http = TransportClient()
            defer { http.shutdown() }
            var options = RegisterLoadOptions(server: url, participants: Self.people, model: .open(RateSchedule(constant: 20), maxInFlight: 100),
                                              duration: .seconds(20))
            options.verify = .off
            let run = Task { try await RegisterLoad.run(options, http: http) { _ in } }
            try await Task.sleep(for: .seconds(1))
            let cancelled = ContinuousClock.now
            run.cancel()
            let report = try await run.value
            #expect(ContinuousClock.now - cancelled < .seconds(5))
            #expect(report.totals.started >= 10 && report.totals.started <= 40, "\(report.totals.started) started")
            #expect(report.totals.seconds < 5)
        }
    }

    /// Defects 2, 4, 6 and the distributed run: two shards at once against the trio, each verified per run, merged into one
    /// report whose counts and histogram are exactly the sum of the shards'.
    @Test func twoShardsMergeIntoOneExactReport() async throws {
        try await Trio.with { trio in
            let setup = try await LoadSetup.run(server: trio.server.url, participants: 20, scheduling: "device", perParticipantKeys: false, http: trio.http)
            let dir = temporaryDirectory("shards")
            let file = dir.appendingPathComponent("p.json")
            try WireJSON.encode(setup).write(to: file)
            func shard(_ spec: String) async throws -> LoadReport {
                let path = dir.appendingPathComponent("\(spec.replacingOccurrences(of: "/", with: "-")).json").path
                let status = try await LoadToolTests.surveyCLI(["load", "register", "--server", trio.server.url, "--participants-file", file.path,
                                                          "--shard", spec, "--concurrency", "2", "--duration", "1s", "--relay", trio.relay.url,
                                                          "--timeout", "7s", "--report", path])
                #expect(status == 0)
                return try WireJSON.decode(LoadReport.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            }
            async let first = shard("1/2")
            async let second = shard("2/2")
            let (a, b) = try await (first, second)
            for report in [a, b] {
                #expect(report.correct == true, "\(report.correctness ?? "")")
                let run = try #require(report.run)
                #expect(run.options["shard"] != nil && run.options["concurrency"] == "2" && run.options["duration"] == "1s")
                #expect(run.version == TrioVersion.current && run.cores > 0 && !run.host.isEmpty)
                #expect(run.participants == 10 && run.timeoutSeconds == 7)
                #expect(run.toolCPUMsPerIteration != nil)
                #expect(report.steps?["relay_token"] != nil && report.steps?["register"] != nil)
            }
            // Verified per run: the same participants again are checked against this run's registrations, not all time.
            let merged = try LoadMerge.merge([a, b])
            #expect(merged.totals.succeeded == a.totals.succeeded + b.totals.succeeded)
            #expect(merged.totals.started == a.totals.started + b.totals.started)
            #expect(merged.correct == true)
            var sum = try HistogramCodec.decode(#require(a.histogram))
            sum.add(try HistogramCodec.decode(#require(b.histogram)))
            #expect(try HistogramCodec.decode(#require(merged.histogram)).totalCount == sum.totalCount)
            #expect(merged.histogram == HistogramCodec.encode(sum))
            #expect(merged.perSecond.map(\.succeeded).reduce(0, +) == merged.totals.succeeded)
            #expect(merged.run?.mergedFrom == 2)
            // The CLI merges the files the same way.
            let out = dir.appendingPathComponent("merged.json")
            #expect(try await LoadToolTests.surveyCLI(["load", "merge", dir.appendingPathComponent("1-2.json").path,
                                                 dir.appendingPathComponent("2-2.json").path, "--report", out.path,
                                                 "--threshold", "register.p99<10s"]) == 0)
            let written = try WireJSON.decode(LoadReport.self, from: Data(contentsOf: out))
            #expect(written.histogram == merged.histogram && written.thresholds == ["register.p99<10s": true])
            // The HTML report: three charts with drawn series (each shard's line too), nothing fetched when viewed.
            let html = LoadHTML.render(written, shards: [a, b])
            #expect(html.components(separatedBy: "<svg").count - 1 == 3)
            let paths = html.components(separatedBy: "class=\"series\" d=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
            #expect(paths.count >= 8 && paths.allSatisfy { $0.hasPrefix("M") }, "\(paths.count) series")
            #expect(paths.contains { $0.contains("L") })
            #expect(html.contains("shard 2") && html.contains("register.p99&lt;10s"))
            #expect(!html.contains("src=") && !html.contains("<link") && !html.contains("<script"))
            // The verdict leads the page, as the exit status says it.
            #expect(html.contains("class=\"verdict pass\">PASS (exit 0)"))
            var failing = written
            failing.thresholds["p99<1ms"] = false
            #expect(LoadHTML.verdict(failing) == (false, "threshold not met: p99<1ms"))
            #expect(LoadHTML.render(failing).contains("class=\"verdict fail\">FAIL (exit 99)"))
            failing.correct = false
            #expect(LoadHTML.verdict(failing).reason == "correctness failed; threshold not met: p99<1ms")
            // A partial last second is drawn per second of the part it covered, and says so (issue 54): a run of 2 s
            // with a 0.5 s drain has a last row (second 2) that covered half a second.
            var partial = written
            partial.totals.seconds = 2
            partial.totals.drainSeconds = 0.5
            partial.perSecond = [.init(second: 0, started: 100, succeeded: 100, failed: 0, p50: 1, p99: 2, histogram: nil),
                                 .init(second: 1, started: 100, succeeded: 100, failed: 0, p50: 1, p99: 2, histogram: nil),
                                 .init(second: 2, started: 0, succeeded: 50, failed: 0, p50: 1, p99: 2, histogram: nil)]
            let drawn = LoadHTML.render(partial)
            #expect(drawn.contains("The last second (2) covered 0.50 s"), "no note on the partial second")
            // Whole seconds get no note.
            partial.totals.drainSeconds = 1
            #expect(!LoadHTML.render(partial).contains("The last second"))
        }
    }

    /// Defect 2: the pass checks this run's registrations on the server; a participant the tool claims but the server
    /// never registered fails it.
    @Test func verificationIsPerRunAndCanFail() async throws {
        try await Trio.with { trio in
            let setup = try await LoadSetup.run(server: trio.server.url, participants: 3, scheduling: "device", perParticipantKeys: false, http: trio.http)
            let options = RegisterLoadOptions(server: trio.server.url, participants: setup.participants, model: .closed(concurrency: 1),
                                              duration: .milliseconds(300))
            let report = try await RegisterLoad.run(options, http: trio.http) { _ in }
            #expect(report.correct == true)
            // Registered before "now": not part of a run that starts now.
            let later = Date().addingTimeInterval(5)
            let (stale, text) = await RegisterLoad.verify(options, http: trio.http, registered: Set(setup.participants.map(\.patientID)), since: later)
            #expect(stale == false && text.contains("0 of 3"))
        }
    }

    @Test func shardsAreDisjointAndCoverEverything() throws {
        let items = Array(0..<10)
        let slices = try (1...3).map { try LoadMerge.shard(items, "\($0)/3") }
        #expect(slices.flatMap { $0 } == items)
        #expect(slices.map(\.count) == [3, 3, 4])
        #expect(throws: LoadUsageError.self) { try LoadMerge.shard(items, "0/3") }
        #expect(throws: LoadUsageError.self) { try LoadMerge.shard(items, "4/3") }
        #expect(throws: LoadUsageError.self) { try LoadMerge.shard(items, "half") }
    }

    @Test func poolSmallerThanConcurrencyIsWarnedAbout() {
        let options = RegisterLoadOptions(server: "http://x", participants: Array(Self.people.prefix(4)), model: .closed(concurrency: 8),
                                          duration: .seconds(1))
        #expect(RegisterLoad.warnings(options).count == 1)
        let enough = RegisterLoadOptions(server: "http://x", participants: Self.people, model: .closed(concurrency: 8), duration: .seconds(1))
        #expect(RegisterLoad.warnings(enough).isEmpty)
        // The open model: participants against the rate, not against the in-flight limit (issue 54).
        let fast = RegisterLoadOptions(server: "http://x", participants: Self.people, model: .open(RateSchedule(constant: 500), maxInFlight: 100),
                                       duration: .seconds(1))
        #expect(RegisterLoad.warnings(fast).first?.contains("500 starts a second") == true)
        let slow = RegisterLoadOptions(server: "http://x", participants: Self.people, model: .open(RateSchedule(constant: 50), maxInFlight: 1000),
                                       duration: .seconds(1))
        #expect(RegisterLoad.warnings(slow).isEmpty)
    }

    /// Issue 54: the messages a new user met. `--setup` against a server without the admin API says so and names
    /// `--participants-file`; an unreachable server is not "no admin API"; `--threshold` lists every metric.
    @Test func errorMessagesSayWhatToDo() async throws {
        try await withStandIn(delayMs: 0) { url in
            let run = try await ChildProcess.run(Executables.url("survey-cli"), ["load", "register", "--server", url, "--setup", "10",
                                                                                 "--concurrency", "1", "--duration", "200ms"])
            #expect(run.status != 0 && run.errors.contains("has no admin API") && run.errors.contains("--participants-file"), "\(run.errors)")
        }
        let unreachable = try await ChildProcess.run(Executables.url("survey-cli"), ["load", "register", "--server", "http://127.0.0.1:9",
                                                                                     "--setup", "10", "--concurrency", "1"])
        #expect(unreachable.status != 0 && unreachable.errors.contains("could not be reached") && !unreachable.errors.contains("admin API"),
                "\(unreachable.errors)")
        do {
            _ = try Threshold(parsing: "latency<5ms")
            Issue.record("an unknown metric was taken")
        } catch {
            #expect("\(error)".contains("errors") && "\(error)".contains("rate") && "\(error)".contains("STEP.pN"), "\(error)")
        }
    }

    @Test func stepThresholdsNameAStep() throws {
        let rule = try Threshold(parsing: "register.p99<50ms")
        #expect(rule.step == "register")
        #expect(throws: LoadUsageError.self) { try Threshold(parsing: "register.errors<1%") }
    }
}
}

/// HdrHistogram's compressed encoding: what is encoded decodes to the same counts, and the text has the standard prefix.
@Suite struct HistogramCodecTests {
    @Test func encodedHistogramsDecodeToTheSameDistribution() throws {
        var histogram = HistogramCodec.make()
        var random = SeededRandom(seed: 11)
        for _ in 0..<10_000 { _ = histogram.record(UInt64(random.next() % 5_000_000) + 1) }
        _ = histogram.record(3_599_999_999)
        let text = HistogramCodec.encode(histogram)
        #expect(text.hasPrefix("HISTF"))
        let decoded = try HistogramCodec.decode(text)
        #expect(decoded.totalCount == histogram.totalCount)
        for p in [1.0, 50, 90, 99, 99.9] { #expect(decoded.valueAtPercentile(p) == histogram.valueAtPercentile(p)) }
        // The exact extremes are not part of the encoding: they come back as their buckets' equivalents.
        #expect(decoded.valuesAreEquivalent(decoded.max, histogram.max) && decoded.valuesAreEquivalent(decoded.min, histogram.min))
        #expect(HistogramCodec.encode(decoded) == text)
        // An empty histogram round-trips too; garbage is refused with a reason.
        #expect(try HistogramCodec.decode(HistogramCodec.encode(HistogramCodec.make())).totalCount == 0)
        #expect(throws: HistogramCodecError.self) { try HistogramCodec.decode("HISTFnot") }
    }

    /// A histogram encoded by the reference Python library (`hdrhistogram` 0.10.8: values 100, 2000, 2000, 50000,
    /// 123456789 in a 1 µs–1 h, 3-digit histogram) decodes here; the same library decoded this tool's reports (count and
    /// percentiles equal) when this was written.
    @Test func theReferenceLibrarysEncodingDecodes() throws {
        let decoded = try HistogramCodec.decode("HISTFAAAAC54nJNpmSzMwMDAywABzFCaEURcm7yEwf4DROA4I9NVWZaJnkz/tzAyAQCtkgjm")
        #expect(decoded.totalCount == 5)
        for (value, count) in [(UInt64(100), UInt64(1)), (2000, 2), (50_000, 1), (123_456_789, 1)] {
            #expect(UInt64(decoded.countForValue(value)) == count, "\(value)")
        }
        #expect(throws: HistogramCodecError.self) { try HistogramCodec.decode(Data([1, 2, 3, 4, 5, 6, 7, 8, 9]).base64EncodedString()) }
    }
}
