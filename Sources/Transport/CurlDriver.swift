import CCurl
import Foundation
import Synchronization

/// Runs libcurl's multi interface on one dedicated thread, driven by `curl_multi_socket_action` and epoll (so a
/// wake-up costs in proportion to the sockets that are ready, however many streams are held). Other threads hand it
/// work through a mutex-protected inbox and wake it through an eventfd.
final class CurlDriver: Sendable {
    private struct Inbox {
        var added: [CurlTransfer] = []
        var cancelled: [UInt64] = []
        var stopping = false
        var stopped = false
        var nextID: UInt64 = 1
        /// Why the driver could not start (every transfer fails with it), or nil.
        var failure: TransportError?
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    /// `@unchecked Sendable` is safe: the multi handle and the loop are only used on the driver thread, except for
    /// the loop's eventfd, which any thread may write to wake it.
    private struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let loop: UnsafeMutablePointer<ccurl_loop>
    }

    private let multi: MultiHandle
    private let inbox = Mutex(Inbox())
    private let defaultTimeout: Duration?
    private let connectTimeout: Duration
    private let finishedThread = Mutex<Bool>(false)

    init(defaultTimeout: Duration?, connectTimeout: Duration, maxConnectionsPerHost: Int) {
        _ = Self.globalInit
        guard let m = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        let loop = UnsafeMutablePointer<ccurl_loop>.allocate(capacity: 1)
        let loopStarted = ccurl_loop_init(m, loop) == 0
        multi = MultiHandle(pointer: m, loop: loop)
        self.defaultTimeout = defaultTimeout
        self.connectTimeout = connectTimeout
        guard loopStarted else {
            // Out of file descriptors (or memory): no crash; the client exists, and every transfer fails with the reason.
            let reason = TransportError(code: "resource_exhausted",
                                        message: "cannot create the HTTP client's epoll loop: \(String(cString: strerror(errno)))")
            curl_multi_cleanup(m)
            loop.deallocate()
            inbox.withLock {
                $0.stopping = true
                $0.stopped = true
                $0.failure = reason
            }
            finishedThread.withLock { $0 = true }
            return
        }
        if maxConnectionsPerHost > 0 {
            ccurl_multi_setopt_long(m, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
            ccurl_multi_setopt_long(m, CURLMOPT_MAXCONNECTS, maxConnectionsPerHost)
        }
        let thread = Thread { [self] in self.run() }
        thread.name = "curl-driver"
        thread.start()
    }

    func makeID() -> UInt64 {
        inbox.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    // Wake-ups are written while holding the inbox lock, and the loop is closed only after `stopped` is set under
    // that lock: no thread can write to the eventfd after it is closed.

    /// Queues a transfer. If the driver has stopped, the transfer fails at once with `shut_down`.
    func submit(_ transfer: CurlTransfer) {
        let loop = multi.loop
        let refusal = inbox.withLock { state -> TransportError? in
            guard !state.stopping else {
                return state.failure ?? TransportError(code: "shut_down", message: "the HTTP client was shut down")
            }
            state.added.append(transfer)
            ccurl_loop_wake(loop)
            return nil
        }
        if let refusal { transfer.finish(refusal) }
    }

    /// Aborts a transfer: it leaves the multi handle and finishes with `cancelled`.
    func cancel(_ id: UInt64) {
        let loop = multi.loop
        inbox.withLock { state in
            guard !state.stopped else { return }
            state.cancelled.append(id)
            ccurl_loop_wake(loop)
        }
    }

    /// Stops the driver: every transfer in flight finishes with `shut_down`. Waits for the thread to end.
    func shutdown() {
        let loop = multi.loop
        inbox.withLock { state in
            guard !state.stopping else { return }
            state.stopping = true
            ccurl_loop_wake(loop)
        }
        while !finishedThread.withLock({ $0 }) { usleep(1000) }
    }

    private func run() {
        var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var byID: [UInt64: CurlTransfer] = [:]
        // Cancels that came before their transfer was submitted (a task cancelled between `makeID` and `submit`): the
        // transfer is cancelled as it arrives. Bounded: cancels of transfers already finished land here too.
        var earlyCancels: Set<UInt64> = []
        let m = multi.pointer

        func remove(_ transfer: CurlTransfer, _ error: TransportError?) {
            if let easy = transfer.easy {
                curl_multi_remove_handle(m, easy)
                running[easy] = nil
            }
            byID[transfer.id] = nil
            transfer.finish(error)
            transfer.cleanup()
        }

        while true {
            let (added, cancelled, stopping) = inbox.withLock { state in
                defer { state.added = []; state.cancelled = [] }
                return (state.added, state.cancelled, state.stopping)
            }
            for id in cancelled where byID[id] == nil && !added.contains(where: { $0.id == id }) {
                earlyCancels.insert(id)
                if earlyCancels.count > 4096, let oldest = earlyCancels.min() { earlyCancels.remove(oldest) }
            }
            for transfer in added {
                if earlyCancels.remove(transfer.id) != nil {
                    transfer.finish(TransportError(code: "cancelled", message: "the request was cancelled"))
                    continue
                }
                if let error = transfer.prepare(defaultTimeout: defaultTimeout, connectTimeout: connectTimeout) {
                    transfer.finish(error)
                    transfer.cleanup()
                    continue
                }
                guard let easy = transfer.easy else { continue }
                curl_multi_add_handle(m, easy)
                running[easy] = transfer
                byID[transfer.id] = transfer
            }
            for id in cancelled {
                if let transfer = byID[id] {
                    remove(transfer, TransportError(code: "cancelled", message: "the request was cancelled"))
                } else if let index = added.firstIndex(where: { $0.id == id }), !added[index].finished {
                    added[index].finish(TransportError(code: "cancelled", message: "the request was cancelled"))
                }
            }
            if stopping {
                for transfer in Array(byID.values) {
                    remove(transfer, TransportError(code: "shut_down", message: "the HTTP client was shut down"))
                }
                // Anything submitted between the last drain and `stopping` is failed too.
                let late = inbox.withLock { state in
                    state.stopped = true
                    defer { state.added = [] }
                    return state.added
                }
                for transfer in late { transfer.finish(TransportError(code: "shut_down", message: "the HTTP client was shut down")) }
                break
            }

            ccurl_loop_step(m, multi.loop, 1000)
            var result = CURLE_OK
            while let easy = ccurl_multi_next_done(m, &result) {
                guard let transfer = running[easy] else { continue }
                var code = 0
                ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
                if transfer.status == 0 { transfer.status = code }
                var connects = 0
                ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
                transfer.newConnections = connects
                remove(transfer, result == CURLE_OK ? nil : Self.error(for: result))
            }
        }
        curl_multi_cleanup(m)
        ccurl_loop_close(multi.loop)
        multi.loop.deallocate()
        finishedThread.withLock { $0 = true }
    }

    static func error(for code: CURLcode) -> TransportError {
        let text = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return TransportError(code: "timeout", message: text)
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST: return TransportError(code: "connect_failed", message: text)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: return TransportError(code: "invalid_request", message: text)
        default: return TransportError(code: "curl_\(code.rawValue)", message: text)
        }
    }
}
