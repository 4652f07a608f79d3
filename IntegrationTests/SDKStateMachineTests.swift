import ClientSDK
import Foundation
import Scheduling
import SurveyWire
import Testing
import Transport
import TrioTesting

extension Integration {
/// The SDK's seams that lost surveys (issue 20), through the real processes: poison pushes, the token race, the double
/// upload, and a client dropped without `close()`.
@Suite(.timeLimit(.minutes(3))) struct SDKStateMachineTests {
    /// Ten pushes whose surveys were deleted after they went out, then a live one. The relay sends a backlog ten
    /// unacked at a time; each deleted survey used to leave its push unacked, so the live one never came.
    @Test func aBacklogOfWithdrawnSurveysDoesNotStallTheLiveOne() async throws {
        try await Trio.with { trio in
            let study = try await trio.admin.createStudy(.init(name: "Poison", timezone: "America/Chicago", scheduling: "server",
                                                               clock: .init(frozenAt: mondayBeforeNineChicago)))
            let who = try await trio.admin.createParticipants(study: study.studyID)[0]
            let storage = temporaryDirectory("poison")
            // Registered, then offline: the relay stores what is pushed meanwhile.
            let first = try SurveyClient(configuration: clientConfiguration(trio, who, storage: storage))
            try await first.start()
            let token = try #require(await first.pushToken)
            await first.close()
            var doomed: [String] = []
            for minute in 0..<10 {
                var survey = moodSurvey
                survey.name = "Doomed \(minute)"
                survey.schedules = [.absolute(date: LocalDate("2026-05-04")!, time: LocalTime(hour: 9, minute: minute))]
                doomed.append(try await trio.admin.createSurvey(study: study.studyID, survey))
            }
            for _ in 0..<10 { _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 60) }
            #expect(try await trio.admin.pushes(study: study.studyID).filter { $0.status == "sent" }.count == 10)
            for id in doomed { try await trio.admin.deleteSurvey(id) }
            var live = moodSurvey
            live.name = "Live"
            live.schedules = [.absolute(date: LocalDate("2026-05-04")!, time: LocalTime(hour: 9, minute: 30))]
            let liveID = try await trio.admin.createSurvey(study: study.studyID, live)
            _ = try await trio.admin.advanceClock(study: study.studyID, seconds: 25 * 60)
            #expect(try await trio.control.device(token).pending.count == 11)

            // The device comes back.
            let client = try SurveyClient(configuration: clientConfiguration(trio, who, storage: storage))
            let recorder = EventRecorder(client)
            let started = ContinuousClock.now
            try await client.start()
            let (survey, _) = try await recorder.survey(timeout: .seconds(10))
            #expect(survey.surveyID == liveID)
            #expect(ContinuousClock.now - started < .seconds(10))
            let withdrawn = await recorder.events.compactMap { if case .surveyWithdrawn(let id, _) = $0 { id } else { nil } }
            #expect(Set(withdrawn) == Set(doomed))
            #expect(try await eventually(.seconds(5)) { try await trio.control.device(token).pending.isEmpty })
            #expect(await client.pendingSurveys().map(\.surveyID) == [liveID])
            await client.close()
        }
    }

    /// A push whose survey fetch fails for a while (the server answers 503) is fetched again on the live stream, with
    /// backoff, and arrives once the server recovers, without the stream having to drop first.
    @Test func aTransientFetchFailureIsRetriedOnTheLiveStream() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            let recorder = EventRecorder(client)
            try await client.start()
            try await trio.admin.setFaults([.init(route: "/download_survey", status: 503, probability: 1)])
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            let (failure, _) = try await recorder.wait { if case .error(let e) = $0 { e } else { nil } }
            #expect(failure.code == "download_failed" && failure.status == 503)
            try await Task.sleep(for: .seconds(1))
            try await trio.admin.setFaults([])
            let (survey, _) = try await recorder.survey(timeout: .seconds(10))
            #expect(survey.surveyID == setup.surveyID)
            // Reported once, however many retries it took; no reconnect was needed.
            let errors = await recorder.events.filter { if case .error = $0 { true } else { false } }
            #expect(errors.count == 1)
            #expect(await !recorder.events.contains { if case .streamReconnecting = $0 { true } else { false } })
            await client.close()
        }
    }

    /// The relay rotates the token while registration (carrying the old one) is on its way: the server must end up with
    /// the new one.
    @Test func aTokenRotatedDuringRegistrationReachesTheServer() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            // Registration takes a second; the rotation lands inside it.
            try await trio.admin.setFaults([.init(route: "/register_user", delayMs: .init(min: 1500, max: 1500), probability: 1)])
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            let starting = Task { try await client.start() }
            let first = try await waitForToken(client)
            try await Task.sleep(for: .milliseconds(300))
            let rotated = try await trio.http.send(TransportRequest(method: "POST", url: trio.relay.url + "/v1/devices/\(first)/rotate"))
            #expect(rotated.status == 200)
            try await starting.value
            #expect(try await eventually(.seconds(10)) {
                let current = await client.pushToken
                let held = try await trio.admin.participant(setup.credentials.patientID).pushToken
                return current != nil && current != first && held == current
            })
            await client.close()
        }
    }

    /// A crash between saving a new token and telling the server: the next start finishes it.
    @Test func aCrashBetweenSavingATokenAndTellingTheServerIsFinishedAtTheNextStart() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let storage = temporaryDirectory("token-crash")
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            try await client.start()
            let old = try #require(await client.pushToken)
            await client.close()
            // What the crash left: a newer token saved, the server never told.
            let fresh = try await trio.control.registerDevice(platform: "android")
            let stateURL = storage.appendingPathComponent("state.json")
            var state = try JSONDecoder().decode([String: JSONValue].self, from: Data(contentsOf: stateURL))
            state["relayToken"] = .string(fresh)
            try WireJSON.encode(state).write(to: stateURL)
            #expect(try await trio.admin.participant(setup.credentials.patientID).pushToken == old)

            let again = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            try await again.start()
            #expect(try await trio.admin.participant(setup.credentials.patientID).pushToken == fresh)
            await again.close()
        }
    }

    /// `submit` and the background retry used to POST the same file at once: `.submitted` (and its telemetry event)
    /// came twice.
    @Test func anUploadIsNeverPostedTwiceAtOnce() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio, survey: moodSurvey)
            let second = try await trio.admin.createSurvey(study: setup.study.studyID, tenOClockSurvey)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            let recorder = EventRecorder(client)
            try await client.start()
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 120)
            _ = try await recorder.survey()
            _ = try await trio.admin.advanceClock(study: setup.study.studyID, seconds: 3600)
            _ = try await recorder.wait { if case .surveyAvailable(let s) = $0, s.surveyID == second { s } else { nil } }
            // The first answers fail: the background retry loop starts.
            try await trio.admin.setFaults([.init(route: "/upload", status: 503, probability: 1)])
            try? await client.submit(answers: ["mood": "1"], for: setup.surveyID)
            // Every upload now takes 1.5 s: the retry loop wakes while the second submit is on its way.
            try await trio.admin.setFaults([.init(route: "/upload", delayMs: .init(min: 1500, max: 1500), probability: 1)])
            try await client.submit(answers: ["mood": "2"], for: second)
            try await Task.sleep(for: .seconds(4))
            let submitted = await recorder.events.compactMap { if case .submitted(let id, _) = $0 { id } else { nil } }
            #expect(submitted.filter { $0 == second }.count == 1, "\(submitted)")
            #expect(submitted.filter { $0 == setup.surveyID }.count == 1, "\(submitted)")
            #expect(try await trio.admin.submissions(study: setup.study.studyID).count == 2)
            await client.close()
        }
    }

    /// A client dropped without `close()` kept reconnecting its stream for ever, swapping the relay's stream with a
    /// later client's on the same directory every 20–100 ms. Now its tasks end with it.
    @Test func aClientDroppedWithoutCloseLeavesNothingRunning() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let storage = temporaryDirectory("dropped")
            var dropped: SurveyClient? = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            try await dropped?.start()
            let token = try #require(await dropped?.pushToken)
            weak let gone = dropped
            dropped = nil
            // Its tasks held it weakly: it is freed, its directory lock with it.
            #expect(try await eventually(.seconds(5)) { gone == nil })
            let before = try await trio.control.device(token).streamsOpened ?? 0
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            let recorder = EventRecorder(client)
            try await client.start()
            #expect(await client.pushToken == token)
            try await Task.sleep(for: .seconds(2))
            // One stream, never replaced: the relay saw exactly one more stream open (the dropped client's task used to
            // reopen its own every 20-100 ms, each replacing the other's).
            let view = try await trio.control.device(token)
            #expect(view.connected)
            #expect(view.streamsOpened == before + 1, "\(String(describing: view.streamsOpened)) streams, \(before) before")
            #expect(await !recorder.events.contains { if case .streamReconnecting = $0 { true } else { false } })
            await client.close()
            // After close, nothing works and nothing is written.
            var afterClose: SurveyClientError?
            do throws(SurveyClientError) { try await client.start() } catch { afterClose = error }
            #expect(afterClose?.kind == .closed)
        }
    }

    /// `stop()` while `start()` is under way (issue 34): the start is cancelled and waited for, so nothing it would have
    /// started (heartbeats, the stream) runs after `stop()` returns. It used to leave a client sending heartbeats with no
    /// push stream.
    @Test func aStopDuringStartLeavesNothingRunning() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            try await trio.admin.setFaults([.init(route: "/register_user", delayMs: .init(min: 800, max: 800), probability: 1)])
            var configuration = clientConfiguration(trio, setup.credentials)
            configuration.heartbeatInterval = .milliseconds(100)
            let client = try SurveyClient(configuration: configuration)
            let starting = Task { () -> SurveyClientError? in
                do throws(SurveyClientError) { try await client.start(); return nil } catch { return error }
            }
            try await Task.sleep(for: .milliseconds(300))
            await client.stop()
            #expect(await starting.value?.code == "cancelled")
            try await trio.admin.setFaults([])
            let heartbeats = try await trio.admin.requests(path: "/mobile-heartbeat").count
            try await Task.sleep(for: .seconds(1))
            #expect(try await trio.admin.requests(path: "/mobile-heartbeat").count == heartbeats)
            if let token = await client.pushToken { #expect(try await !trio.control.device(token).connected) }
            // It starts again afterwards.
            try await client.start()
            #expect(await client.isRegistered)
            await client.close()
        }
    }

    /// A client dropped while its token renewal keeps failing (the server refuses `/set_fcm_token`) is freed: the
    /// renewal's backoff no longer holds it (issue 34), so its directory is free for the next client.
    @Test func aClientDroppedDuringAFailingRenewalIsFreed() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let storage = temporaryDirectory("renewal")
            var dropped: SurveyClient? = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            try await dropped?.start()
            let token = try #require(await dropped?.pushToken)
            try await trio.admin.setFaults([.init(route: "/set_fcm_token", status: 503, probability: 1)])
            // The relay forgets the token: the stream answers 410, and the renewal begins (and fails at the server).
            _ = try await trio.http.send(TransportRequest(method: "DELETE", url: trio.relay.url + "/v1/devices/\(token)"))
            #expect(try await eventually(.seconds(10)) { try await !trio.admin.requests(path: "/set_fcm_token", wait: nil).filter { $0.status == 503 }.isEmpty })
            weak let gone = dropped
            dropped = nil
            #expect(try await eventually(.seconds(10)) { gone == nil })
            let next = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            await next.close()
        }
    }

    /// Every throwing call after `close()` throws `closed` (the messaging calls answered, and saved nothing).
    @Test func messagingAfterCloseThrowsClosed() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials))
            await client.close()
            let context = AppContext(appName: "Firefox", locale: "en-US", installationDate: Date())
            var codes: [String] = []
            do throws(SurveyClientError) { _ = try await client.nextMessage(for: "microsurvey", context: context) } catch { codes.append(error.code) }
            do throws(SurveyClientError) { _ = try await client.featureValue("messaging", defaults: [String: String]()) } catch { codes.append(error.code) }
            do throws(SurveyClientError) { _ = try await client.refreshFeatures() } catch { codes.append(error.code) }
            do throws(SurveyClientError) { _ = try await client.recordBehavior("homepage_viewed") } catch { codes.append(error.code) }
            #expect(codes == ["closed", "closed", "closed", "closed"])
        }
    }

    /// `run()` owns the client: cancelling the task that runs it closes the client, and when it returns nothing of the
    /// client runs (its directory can be used by another client at once).
    @Test func runOwnsTheClientUntilItsTaskIsCancelled() async throws {
        try await Trio.with { trio in
            let setup = try await StudySetup.make(trio)
            let storage = temporaryDirectory("run")
            let client = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            let runner = Task { try await client.run() }
            #expect(try await eventually(.seconds(5)) { await client.isRegistered })
            let token = try #require(await client.pushToken)
            #expect(try await eventually(.seconds(5)) { try await trio.control.device(token).connected })
            runner.cancel()
            try await runner.value
            #expect(await client.isClosed)
            // The stream is gone and the directory is free.
            #expect(try await eventually(.seconds(5)) { try await !trio.control.device(token).connected })
            let next = try SurveyClient(configuration: clientConfiguration(trio, setup.credentials, storage: storage))
            await next.close()
        }
    }
}
}

/// The token a starting client got from the relay (polled).
private func waitForToken(_ client: SurveyClient) async throws -> String {
    let deadline = ContinuousClock.now + .seconds(5)
    while ContinuousClock.now < deadline {
        if let token = await client.pushToken { return token }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw NoToken()
}

private struct NoToken: Error, CustomStringConvertible {
    var description: String { "no relay token within 5 s" }
}