import Foundation
import Synchronization
import Logging
import Messaging
import Scheduling
import SurveyCrypto
import SurveyWire
import Transport

/// Answers: encrypted with the study's key, kept in the upload outbox until the server takes them, retried with backoff.
extension SurveyClient {
    /// Encrypts the answers with the study's public key and uploads them; on acceptance the stored survey is removed.
    /// - Parameters:
    ///   - answers: answer text by question id; questions not answered are written with an empty answer.
    ///   - surveyID: the stored survey the answers are for.
    /// - Throws: `survey_not_found` when no such survey is stored, `not_registered`, `transport` or `upload_failed`
    ///   (the encrypted file stays in the outbox and is retried in the background with backoff, and by ``start()``;
    ///   ``SurveyClientEvent/submitted(surveyID:fileName:)`` follows once the server takes it), `upload_rejected`.
    public func submit(answers: [String: String], for surveyID: String) async throws(SurveyClientError) {
        guard !lifecycle.isClosed else { throw .closed }
        guard state.registered, let keyText = state.publicKey, let der = Data(base64Encoded: keyText) else {
            throw SurveyClientError(code: "not_registered", message: "register before submitting")
        }
        guard let stored = files.read(StoredSurvey.self, from: files.surveyURL(surveyID)) else {
            throw SurveyClientError(code: "survey_not_found", message: "no stored survey \(surveyID)")
        }
        if submittingSurveyIDs().contains(surveyID) {
            throw SurveyClientError(code: "submission_pending",
                                    message: "answers to \(surveyID) are already waiting to be uploaded; they are retried until the server takes them")
        }
        let rows = Self.answerRows(for: stored.questions, answers: answers)
        let body: String
        do {
            body = try BeiweFile.encrypt(lines: SurveyAnswersCSV.lines(for: rows), publicKey: RSAKey(publicKeyDER: [UInt8](der)))
        } catch {
            throw SurveyClientError(code: "encryption_failed", message: "\(error)")
        }
        let fileName = SurveyAnswersCSV.fileName(patientID: configuration.patientID, surveyID: surveyID, epochMillis: WireTime.epochMillis(now()))
        let pending = PendingUpload(fileName: fileName, surveyID: surveyID, body: body, scheduleUUIDs: stored.scheduleUUIDs)
        try files.write(pending, to: files.uploadURL(fileName))
        do {
            try await upload(pending)
        } catch {
            // Kept in the outbox: retried in the background until the server takes it (`.submitted` then). A cancelled
            // call is no failure: its file waits for the next retry or start, and nothing is scheduled on its behalf.
            if error.code != "upload_rejected" && !error.isCancellation { scheduleUploadRetry() }
            throw error
        }
    }

    /// Retries the upload and ping outboxes (and an unannounced token) with exponential backoff and jitter until all
    /// are done or the client stops: its loop's ``OutboxRetryMachine`` decides, the loop performs (``attemptOutboxes()``).
    func scheduleUploadRetry() {
        runtime.outboxRetry.send(.requested)
    }

    /// One attempt at every outbox; true when nothing is left to send.
    func attemptOutboxes() async -> Bool {
        let uploadsDone = await retryUploads()
        let pingsDone = await retryPingsOnce()
        let tokenDone = (try? await announceTokenIfNeeded()) != nil
        return uploadsDone && pingsDone && tokenDone
    }

    /// Uploads one answer file. `background`: no caller will see a thrown error, so a final refusal is emitted (each
    /// error is reported once: thrown to a caller, or emitted).
    func upload(_ pending: PendingUpload, background: Bool = false) async throws(SurveyClientError) {
        // One upload of a file at a time: `submit` and the retry loop never POST it together.
        guard outbox.begin(pending.fileName) else {
            throw SurveyClientError(code: "submission_pending", message: "\(pending.fileName) is being uploaded")
        }
        defer { outbox.end(pending.fileName) }
        var form = api.baseForm(state: state)
        form["file_name"] = pending.fileName
        form["file"] = pending.body
        let response = try await api.upload(form)
        let text = response.text
        if response.status == 200 {
            if text == "upload successful." {
                // The survey goes before its outbox file: a crash in between leaves the file, whose retry the server
                // stores once (same name); the other order would leave the survey to be answered a second time.
                // Occurrences that arrived while these answers were on their way stay, and are shown now.
                let url = files.surveyURL(pending.surveyID)
                var remaining: StoredSurvey?
                if let answered = pending.scheduleUUIDs, var stored = files.read(StoredSurvey.self, from: url) {
                    stored.scheduleUUIDs.removeAll { answered.contains($0) }
                    if !stored.scheduleUUIDs.isEmpty { remaining = stored }
                }
                if let remaining { try writeSurvey(remaining) } else { removeSurvey(pending.surveyID) }
                files.remove(files.uploadURL(pending.fileName))
                record(category: "survey", name: "submitted", extra: ["survey_id": pending.surveyID])
                emit(.submitted(surveyID: pending.surveyID, fileName: pending.fileName))
                if let remaining { emit(.surveyAvailable(remaining)) }
                return
            }
            // Beiwe's 200 for a file it can never accept: the device deletes the file, the survey stays.
            files.remove(files.uploadURL(pending.fileName))
            let error = SurveyClientError(code: "upload_rejected", message: text, status: 200)
            if background { emit(.error(error)) }
            throw error
        }
        throw SurveyClientError(code: response.status == 401 || response.status == 403 ? "invalid_credentials" : "upload_failed",
                                message: "upload answered \(response.status): \(MobileAPI.excerpt(response))", status: response.status)
    }

    /// Tries every file of the upload outbox once; true when the outbox is empty afterwards.
    @discardableResult
    func retryUploads() async -> Bool {
        for (url, listed) in files.list(PendingUpload.self, in: files.uploadsURL) {
            // Each file is read again just before it goes: the list was taken before earlier uploads awaited, and
            // `submit` may have sent and removed it meanwhile (sending it again would report it submitted twice).
            guard !outbox.inFlight.contains(listed.fileName), let pending = files.read(PendingUpload.self, from: url) else { continue }
            do { try await upload(pending, background: true) } catch { logger.info("upload retry failed", metadata: ["error": "\(error)"]) }
        }
        return files.list(PendingUpload.self, in: files.uploadsURL).isEmpty
    }

    /// Beiwe answer rows for a survey's questions (info text boxes are skipped).
    static func answerRows(for questions: [SurveyQuestion], answers: [String: String]) -> [SurveyAnswer] {
        questions.filter(\.takesAnswer).map { question in
            SurveyAnswer(questionID: question.id, questionType: question.kind.rawValue, questionText: question.text,
                         answerOptions: question.answerOptions, answer: answers[question.id] ?? "")
        }
    }
}
