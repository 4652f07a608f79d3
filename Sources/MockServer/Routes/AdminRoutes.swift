import Foundation
import Hummingbird
import Scheduling
import ServerSupport
import SurveyCrypto
import SurveyWire

/// The admin API (PROTOCOL.md §2): studies, participants, surveys, clocks, and what happened.
struct AdminRoutes: Sendable {
    let context: ServerContext
    /// The admin API's parts of the store: what it writes, what it lists, and the telemetry listings.
    var store: any StudyAdminStore & HistoryStore & TelemetryStore { context.store }
    var limit: Int { context.configuration.maxBodyBytes }

    func add(to router: Router<BasicRequestContext>) {
        let admin = router.group("/__admin")
        admin.get("/health") { _, _ in JSONResponse.make(["status": "ok"]) }
        admin.get("/info") { _, _ in info() }
        admin.post("/reset") { _, _ -> Response in
            try await store.wipe()
            context.telemetryBytes.reset()
            context.faults.replaceAll([])
            return JSONResponse.empty(.noContent)
        }
        admin.put("/faults") { request, _ in try await setFaults(request) }
        admin.post("/studies") { request, _ in try await createStudy(request) }
        admin.get("/studies/{study_id}") { _, ctx in JSONResponse.make(try await studyView(try ctx.parameters.require("study_id"))) }
        admin.get("/studies/{study_id}/stats") { _, ctx in try await stats(try ctx.parameters.require("study_id")) }
        admin.post("/studies/{study_id}/interventions") { request, ctx in try await addStudyIntervention(request, try ctx.parameters.require("study_id")) }
        admin.post("/studies/{study_id}/participants") { request, ctx in try await createParticipants(request, try ctx.parameters.require("study_id")) }
        admin.get("/participants/{patient_id}") { _, ctx in try await participant(try ctx.parameters.require("patient_id")) }
        admin.post("/participants/{patient_id}/interventions") { request, ctx in
            try await intervention(request, try ctx.parameters.require("patient_id"))
        }
        admin.post("/studies/{study_id}/surveys") { request, ctx in try await createSurvey(request, try ctx.parameters.require("study_id")) }
        admin.get("/surveys/{survey_id}") { _, ctx in try await surveyView(try ctx.parameters.require("survey_id")) }
        admin.put("/surveys/{survey_id}") { request, ctx in try await replaceSurvey(request, try ctx.parameters.require("survey_id")) }
        admin.delete("/surveys/{survey_id}") { _, ctx in try await deleteSurvey(try ctx.parameters.require("survey_id")) }
        admin.get("/studies/{study_id}/occurrences") { request, ctx in try await occurrences(request, try ctx.parameters.require("study_id")) }
        admin.get("/studies/{study_id}/pushes") { request, ctx in try await pushes(request, try ctx.parameters.require("study_id")) }
        admin.get("/pushes/{push_uuid}") { _, ctx in try await push(try ctx.parameters.require("push_uuid")) }
        admin.get("/studies/{study_id}/submissions") { request, ctx in try await submissions(request, try ctx.parameters.require("study_id")) }
        admin.get("/telemetry") { request, _ in try await telemetry(request) }
        admin.get("/telemetry/gaps") { request, _ in try await telemetryGaps(request) }
        admin.get("/studies/{study_id}/clock") { _, ctx in try await clock(try ctx.parameters.require("study_id")) }
        admin.post("/studies/{study_id}/clock") { request, ctx in try await moveClock(request, try ctx.parameters.require("study_id")) }
    }

    func info() -> Response {
        JSONResponse.make(AdminWire.Info(
            service: "mock-server", version: MockServer.version, pid: Int(getpid()), url: context.bound.url ?? "",
            store: context.configuration.store.kind, kdfIterations: context.configuration.kdfIterations, relayURL: context.configuration.relayURL,
            relayURLs: context.configuration.relayURLs))
    }

    // MARK: Studies

    func study(_ id: String) async throws -> StudyRecord {
        guard let study = try await store.study(id) else {
            throw MockServerError.notFound("study", id)
        }
        return study
    }

    func interventionNames(_ studyID: String) async throws -> [String] {
        try await store.studyInterventions(studyID)
    }

    func view(_ s: StudyRecord, interventions: [String]) -> AdminWire.Study {
        AdminWire.Study(
            studyID: s.id, name: s.name, timezone: s.timezone, scheduling: s.scheduling, maxDelayMinutes: s.maxDelayMinutes,
            perParticipantKeys: s.perParticipantKeys, deviceSettings: DeviceSettings.merged(s.settingsObject, id: MobileRoutes.settingsID(s.id)),
            clock: AdminWire.Clock(now: WireTime.format(s.now(real: context.realNow())), mode: s.clockMode),
            interventions: interventions, createdAt: WireTime.format(Date(timeIntervalSince1970: s.createdAt)))
    }

    func studyView(_ id: String) async throws -> AdminWire.Study {
        view(try await study(id), interventions: try await interventionNames(id))
    }

    func createStudy(_ request: Request) async throws -> Response {
        let body = try await AdminValidation.decode(AdminWire.CreateStudy.self, from: request, allowed: AdminValidation.studyKeys, limit: limit)
        try AdminValidation.study(body)
        let key = try RSAKey.generate(bits: 2048)
        let frozen = body.clock.flatMap { WireTime.parse($0.frozenAt) }
        let record = StudyRecord(
            id: Identifiers.objectID(), name: body.name, timezone: body.timezone ?? MobileRoutes.fallbackZone, scheduling: body.scheduling,
            deviceSettings: try WireJSON.encodeString(body.deviceSettings ?? [:]), maxDelayMinutes: body.maxDelayMinutes ?? 1440,
            perParticipantKeys: body.perParticipantKeys ?? false, clockMode: frozen == nil ? "real" : "frozen",
            frozenAt: frozen?.timeIntervalSince1970, privateKey: Data(try key.privateKeyDER()),
            createdAt: context.realNow().timeIntervalSince1970)
        let names = Array(Set(body.interventions ?? [])).sorted()
        try await store.createStudy(record, interventions: names)
        return JSONResponse.make(view(record, interventions: names), status: .created)
    }

    struct InterventionName: Codable { var name: String }

    func addStudyIntervention(_ request: Request, _ studyID: String) async throws -> Response {
        let body = try await AdminValidation.decode(InterventionName.self, from: request, allowed: ["name"], limit: limit)
        guard !body.name.isEmpty, body.name.unicodeScalars.count <= 100 else { throw MockServerError.badField("name", "name must be 1-100 characters") }
        _ = try await study(studyID)
        try await store.addStudyIntervention(studyID, name: body.name)
        return JSONResponse.make(try await studyView(studyID), status: .created)
    }

    func stats(_ id: String) async throws -> Response {
        _ = try await study(id)
        let result = try await store.stats(studyID: id)
        return JSONResponse.make(result)
    }

    // MARK: Faults

    /// `PUT /__admin/faults`: one rule (added, replacing its route's), or a list of rules (replacing all; `[]` clears).
    func setFaults(_ request: Request) async throws -> Response {
        let bytes = try await request.collectBody(limit: limit)
        guard let body = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            throw APIError(.badRequest, code: "invalid_json", "the body must be a fault rule object or a list of them")
        }
        let objects: [JSONValue]
        switch body {
        case .object: objects = [body]
        case .array(let list): objects = list
        default: throw APIError(.badRequest, code: "invalid_json", "the body must be a fault rule object or a list of them")
        }
        var rules: [AdminWire.FaultRule] = []
        for object in objects {
            guard let members = object.objectValue else { throw APIError(.badRequest, code: "invalid_json", "each fault rule must be an object") }
            if let unknown = members.keys.sorted().first(where: { !AdminWire.FaultRule.allowedKeys.contains($0) }) {
                throw APIError(.badRequest, code: "unknown_field", "'\(unknown)' is not a field of a fault rule", field: unknown)
            }
            let rule: AdminWire.FaultRule
            do {
                rule = try JSONDecoder().decode(AdminWire.FaultRule.self, from: WireJSON.encode(object))
            } catch {
                throw APIError.invalidJSON(error)
            }
            if let problem = FaultTable.validate(rule) {
                throw APIError(.badRequest, code: "invalid_field", problem.message, field: problem.field)
            }
            rules.append(rule)
        }
        if case .array = body { context.faults.replaceAll(rules) } else { context.faults.set(rules[0]) }
        return JSONResponse.empty(.noContent)
    }

    // MARK: Participants

    func createParticipants(_ request: Request, _ studyID: String) async throws -> Response {
        let body = try await AdminValidation.decode(AdminWire.CreateParticipants.self, from: request,
                                                    allowed: ["patient_id", "password", "count"], limit: limit)
        let study = try await study(studyID)
        var wanted: [(String, String)] = []
        if let count = body.count {
            guard body.patientID == nil, body.password == nil else {
                throw APIError(.badRequest, code: "invalid_field", "give either count or patient_id/password, not both", field: "count")
            }
            guard (1...10_000).contains(count) else { throw MockServerError.badField("count", "count must be 1-10000") }
            wanted = (0..<count).map { _ in (Identifiers.easyAlphanumeric(), Identifiers.easyAlphanumeric()) }
        } else {
            let id = body.patientID ?? Identifiers.easyAlphanumeric()
            try AdminValidation.patientID(id)
            if let password = body.password, password.isEmpty { throw MockServerError.badField("password", "password must not be empty") }
            wanted = [(id, body.password ?? Identifiers.easyAlphanumeric())]
        }
        let iterations = context.configuration.kdfIterations
        let perParticipantKeys = study.perParticipantKeys
        // Password hashing (and per-participant keys) dominate: spread them over the cores.
        let records = try await Self.parallelMap(wanted) { id, password in
            let key: Data? = perParticipantKeys ? Data(try RSAKey.generate(bits: 2048).privateKeyDER()) : nil
            return ParticipantRecord(
                patientId: id, studyId: studyID,
                passwordRecord: try BeiwePassword.makeRecord(deviceHash: BeiwePassword.deviceHash(password), iterations: iterations),
                privateKey: key)
        }
        try await store.insertParticipants(records)
        return JSONResponse.make(AdminWire.CreatedParticipants(participants: wanted.map { AdminWire.Credentials(patientID: $0.0, password: $0.1) }),
                                 status: .created)
    }

    /// `transform` over `items` in order, in as many chunks as the machine has cores.
    static func parallelMap<T: Sendable, R: Sendable>(_ items: [T], _ transform: @escaping @Sendable (T) throws -> R) async throws -> [R] {
        let chunks = max(1, min(ProcessInfo.processInfo.activeProcessorCount, items.count / 64))
        if chunks == 1 { return try items.map(transform) }
        let size = (items.count + chunks - 1) / chunks
        return try await withThrowingTaskGroup(of: (Int, [R]).self) { group in
            for start in stride(from: 0, to: items.count, by: size) {
                let slice = Array(items[start..<min(start + size, items.count)])
                group.addTask { (start, try slice.map(transform)) }
            }
            var parts: [(Int, [R])] = []
            for try await part in group { parts.append(part) }
            return parts.sorted { $0.0 < $1.0 }.flatMap(\.1)
        }
    }

    func participant(_ id: String) async throws -> Response {
        guard let p = try await store.participant(id) else {
            throw MockServerError.notFound("participant", id)
        }
        return JSONResponse.make(p.view)
    }

    func intervention(_ request: Request, _ patientID: String) async throws -> Response {
        let body = try await AdminValidation.decode(AdminWire.Intervention.self, from: request, allowed: ["name", "date"], limit: limit)
        guard !body.name.isEmpty else { throw MockServerError.badField("name", "name must not be empty") }
        guard LocalDate(body.date) != nil else { throw MockServerError.badField("date", "date must be a real YYYY-MM-DD date", code: "invalid_date") }
        guard let p = try await store.participant(patientID) else {
            throw MockServerError.notFound("participant", patientID)
        }
        guard try await interventionNames(p.studyId).contains(body.name) else {
            throw MockServerError.badField("name", "the study has no intervention named '\(body.name)'", code: "unknown_intervention")
        }
        try await store.setInterventionDate(patientID: patientID, name: body.name, date: body.date)
        if p.registeredAt != nil { try await context.scheduler.participantChanged(studyID: p.studyId, patientID: patientID) }
        return JSONResponse.empty(.noContent)
    }

    // MARK: Surveys

    func decodeSurvey(_ request: Request, studyID: String) async throws -> AdminWire.CreateSurvey {
        let body = try await AdminValidation.decode(AdminWire.CreateSurvey.self, from: request, allowed: AdminValidation.surveyKeys, limit: limit)
        try AdminValidation.survey(body, interventions: Set(try await interventionNames(studyID)))
        return body
    }

    func createSurvey(_ request: Request, _ studyID: String) async throws -> Response {
        _ = try await study(studyID)
        let body = try await decodeSurvey(request, studyID: studyID)
        let now = context.realNow().timeIntervalSince1970
        let record = SurveyRecord(
            id: Identifiers.objectID(), studyId: studyID, name: body.name, surveyType: body.surveyType,
            content: try WireJSON.encodeString(body.content), settings: try WireJSON.encodeString(body.settings ?? .object([:])),
            schedules: try WireJSON.encodeString(body.schedules), deleted: false, createdAt: now, updatedAt: now)
        try await store.insertSurvey(record)
        try await context.scheduler.surveyChanged(studyID: studyID, surveyID: record.id)
        return JSONResponse.make(AdminWire.SurveyCreated(surveyID: record.id), status: .created)
    }

    func existingSurvey(_ id: String) async throws -> SurveyRecord {
        guard let survey = try await store.survey(id), !survey.deleted else {
            throw MockServerError.notFound("survey", id)
        }
        return survey
    }

    func surveyView(_ id: String) async throws -> Response {
        JSONResponse.make(try await existingSurvey(id).entry(withTimings: true))
    }

    func replaceSurvey(_ request: Request, _ id: String) async throws -> Response {
        var survey = try await existingSurvey(id)
        let body = try await decodeSurvey(request, studyID: survey.studyId)
        survey.name = body.name
        survey.surveyType = body.surveyType
        survey.content = try WireJSON.encodeString(body.content)
        survey.settings = try WireJSON.encodeString(body.settings ?? .object([:]))
        survey.schedules = try WireJSON.encodeString(body.schedules)
        survey.updatedAt = context.realNow().timeIntervalSince1970
        let updated = survey
        try await store.updateSurvey(updated)
        try await context.scheduler.surveyChanged(studyID: survey.studyId, surveyID: id)
        return JSONResponse.make(AdminWire.SurveyCreated(surveyID: id))
    }

    func deleteSurvey(_ id: String) async throws -> Response {
        let survey = try await existingSurvey(id)
        try await store.deleteSurvey(id)
        try await context.scheduler.surveyChanged(studyID: survey.studyId, surveyID: id)
        return JSONResponse.empty(.noContent)
    }

    // MARK: What happened

    /// A listing's query (its own parameters, `wait` and `min_count`; others refused), after checking the study exists.
    func listing(_ request: Request, _ studyID: String, allowed: Set<String> = ["patient_id"]) async throws -> ListingQuery {
        let query = try ListingQuery(request, allowed: allowed)
        _ = try await study(studyID)
        return query
    }

    /// The listing once `query`'s `min_count` items are there or its `wait` ends (PROTOCOL.md §8). Something answered
    /// by either API moves the journal; the scheduler's pushes are seen by the recheck.
    func answer<Item: Encodable>(_ query: ListingQuery, _ fetch: () async throws -> [Item]) async throws -> Response {
        JSONResponse.make(try await query.answer(changes: context.journal.changes, fetch))
    }

    func occurrences(_ request: Request, _ studyID: String) async throws -> Response {
        let query = try await listing(request, studyID, allowed: ["patient_id", "status"])
        let status = query["status"]
        guard status == nil || status == "all" || status == "pending" else {
            throw MockServerError.badField("status", "status must be \"pending\" (the default) or \"all\"")
        }
        let all = status == "all"
        return try await answer(query) { try await store.occurrences(studyID: studyID, patientID: query["patient_id"], all: all).map(\.view) }
    }

    /// One push of the send log, by its uuid (whatever the study).
    func push(_ uuid: String) async throws -> Response {
        let found = try await store.push(uuid: uuid)
        guard let (record, confirmed) = found else { throw APIError(.notFound, code: "unknown_push", "no push has the uuid '\(uuid)'") }
        var view = record.view
        let reported = Set(confirmed.map { $0.lowercased() })
        view.confirmedUUIDs = view.scheduleUUIDs.filter { reported.contains($0.lowercased()) }
        return JSONResponse.make(view)
    }

    func pushes(_ request: Request, _ studyID: String) async throws -> Response {
        let query = try await listing(request, studyID)
        return try await answer(query) {
            let rows = try await store.pushes(studyID: studyID, patientID: query["patient_id"])
            // Receipts the devices reported (`notification_uuids`), per participant.
            let confirmed = try await store.notificationReceipts(studyID: studyID)
            return rows.map { record in
                var view = record.view
                view.confirmedUUIDs = view.scheduleUUIDs.filter { confirmed.contains(record.patientId + " " + $0.lowercased()) }
                return view
            }
        }
    }

    func submissions(_ request: Request, _ studyID: String) async throws -> Response {
        let query = try await listing(request, studyID)
        return try await answer(query) { try await store.submissions(studyID: studyID, patientID: query["patient_id"]).map(\.view) }
    }

    /// Per client and ping name: the `ping_info.seq` values stored and the ones missing below the highest
    /// (Firefox saw gaps for 6.2% of clients, bug B16). Only sequence numbers in ``WireLimits/pingSeq`` count (a row
    /// stored before ingestion checked them is skipped), and `missing` lists at most ``SeqGaps/missingListLimit``
    /// numbers, with `missing_count` giving them all: the report is linear in the rows stored, whatever they hold.
    func telemetryGaps(_ request: Request) async throws -> Response {
        let client = try ListingQuery(request, allowed: ["client_id"])["client_id"]
        let range = WireLimits.pingSeq
        let rows = try await store.pingSequences(clientID: client, range: range)
        var report: [AdminWire.SeqGaps] = []
        var index = rows.startIndex
        while index < rows.endIndex {
            let (client, ping, _) = rows[index]
            var end = index
            while end < rows.endIndex, rows[end].0 == client, rows[end].1 == ping { end += 1 }
            // Pings without a client id (stored with an empty one) have no sequence of their own to report.
            if !client.isEmpty {
                report.append(AdminWire.SeqGaps(clientID: client, ping: ping, sortedSeqs: rows[index..<end].map(\.2)))
            }
            index = end
        }
        return JSONResponse.make(report)
    }

    func telemetry(_ request: Request) async throws -> Response {
        let query = try ListingQuery(request, allowed: ["client_id", "ping", "since"])
        let sinceText = query["since"]
        let since = sinceText.flatMap { WireTime.parse($0)?.timeIntervalSince1970 }
        if sinceText != nil, since == nil { throw MockServerError.badField("since", "since must be an RFC 3339 time") }
        return try await answer(query) { try await store.pings(clientID: query["client_id"], ping: query["ping"], since: since).map(\.view) }
    }

    // MARK: Clock

    func clock(_ id: String) async throws -> Response {
        let s = try await study(id)
        return JSONResponse.make(AdminWire.Clock(now: WireTime.format(s.now(real: context.realNow())), mode: s.clockMode))
    }

    func moveClock(_ request: Request, _ id: String) async throws -> Response {
        let body = try await AdminValidation.decode(AdminWire.ClockRequest.self, from: request, allowed: ["freeze_at", "advance_seconds", "real"], limit: limit)
        let given = [body.freezeAt != nil, body.advanceSeconds != nil, body.real != nil].filter { $0 }.count
        guard given == 1 else {
            throw APIError(.badRequest, code: "invalid_clock_request", "give exactly one of freeze_at, advance_seconds, real")
        }
        if let real = body.real, !real { throw MockServerError.badField("real", "real must be true") }
        if let freeze = body.freezeAt, WireTime.parse(freeze) == nil {
            throw MockServerError.badField("freeze_at", "freeze_at must be an RFC 3339 time")
        }
        _ = try await study(id)
        return JSONResponse.make(try await context.scheduler.moveClock(studyID: id, request: body))
    }
}
