import NIOCore
import NIOPosix
import Transport

/// One event loop's keep-alive connections, by target: at most `maxPerTarget` open to each, idle ones reused newest
/// first, requests beyond the limit queued in order. Confined to its loop (every method is called there).
///
/// Request timeouts are deadlines the connections hold, checked by one timer per pool set for the earliest of them,
/// rather than a timer per request (scheduling and cancelling one cost 5 % of `survey-cli load register`'s CPU).
final class LoopPool {
    struct Pending {
        var request: TransportRequest
        var path: String
        var reply: LoopReply
        var timeout: TimeAmount
        /// Already sent once on a reused connection that closed before answering.
        var resent = false
    }

    let loop: any EventLoop
    let maxPerTarget: Int
    let connectTimeout: TimeAmount
    private var idle: [LoopTarget: [LoopExchangeHandler]] = [:]
    private var open: [LoopTarget: Int] = [:]
    private var waiting: [LoopTarget: CircularBuffer<Pending>] = [:]
    /// Every connection this pool opened for requests that has not closed (event streams have no deadline: not here).
    private var connections: [LoopExchangeHandler] = []
    /// The deadline check's timer and when it fires.
    private var check: (timer: Scheduled<Void>, at: NIODeadline)?

    init(loop: any EventLoop, maxPerTarget: Int, connectTimeout: TimeAmount) {
        self.loop = loop
        self.maxPerTarget = max(1, maxPerTarget)
        self.connectTimeout = connectTimeout
    }

    /// Sends `request` on a free connection to `target` (opening one if the limit allows, else after those queued).
    func execute(_ pending: Pending, target: LoopTarget) {
        if var free = idle[target], let handler = free.popLast() {
            idle[target] = free
            start(pending, on: handler, target: target, reused: true)
        } else if open[target, default: 0] < maxPerTarget {
            open[target, default: 0] += 1
            let pool = NIOLoopBound(self, eventLoop: loop)
            connect(target, localAddress: pending.request.localAddress).whenComplete { result in
                switch result {
                case .success(let handler):
                    pool.value.connections.append(handler.value)
                    pool.value.start(pending, on: handler.value, target: target, reused: false)
                case .failure(let error):
                    pending.reply.fail(error as? TransportError ?? TransportError(code: "connect_failed", message: "\(error)"))
                    pool.value.closed(target)
                }
            }
        } else {
            waiting[target, default: []].append(pending)
        }
    }

    /// Opens a connection to `target` for an event stream (outside the limit: a stream holds its connection for good).
    func openStream(_ target: LoopTarget, localAddress: String?) -> EventLoopFuture<NIOLoopBound<LoopExchangeHandler>> {
        connect(target, localAddress: localAddress)
    }

    private func start(_ pending: Pending, on handler: LoopExchangeHandler, target: LoopTarget, reused: Bool) {
        handler.onDone = { keepAlive in self.released(handler, target: target, keepAlive: keepAlive) }
        handler.onClosed = { self.closed(target, handler: handler) }
        let deadline = NIODeadline.now() + pending.timeout
        checkDeadlines(by: deadline)
        var exchange = LoopExchangeHandler.Buffered(reply: pending.reply, reused: reused, deadline: deadline)
        if reused, !pending.resent {
            var again = pending
            again.resent = true
            exchange.resend = { self.execute(again, target: target) }
        }
        handler.send(pending.request, path: pending.path, target: target, exchange: exchange)
    }

    private func released(_ handler: LoopExchangeHandler, target: LoopTarget, keepAlive: Bool) {
        guard keepAlive else {
            handler.close()  // `closed` follows
            return
        }
        if let next = waiting[target]?.popFirst() {
            start(next, on: handler, target: target, reused: true)
        } else {
            handler.onDone = { _ in }
            handler.onClosed = { self.closed(target, handler: handler) }
            idle[target, default: []].append(handler)
        }
    }

    /// Makes sure the deadline check runs by `deadline`.
    private func checkDeadlines(by deadline: NIODeadline) {
        if let check, check.at <= deadline { return }
        check?.timer.cancel()
        let pool = NIOLoopBound(self, eventLoop: loop)
        check = (loop.scheduleTask(deadline: deadline) { pool.value.deadlinesDue() }, deadline)
    }

    /// Fails the requests whose deadline has passed (their connections close) and sets the check for the next one.
    private func deadlinesDue() {
        check = nil
        let now = NIODeadline.now()
        var next: NIODeadline?
        for handler in connections {
            guard let deadline = handler.deadline else { continue }
            if deadline <= now {
                handler.timedOut()
            } else {
                next = min(next ?? deadline, deadline)
            }
        }
        if let next { checkDeadlines(by: next) }
    }

    private func closed(_ target: LoopTarget, handler: LoopExchangeHandler? = nil) {
        if let handler {
            if let index = idle[target]?.firstIndex(where: { $0 === handler }) { idle[target]!.remove(at: index) }
            if let index = connections.firstIndex(where: { $0 === handler }) { connections.remove(at: index) }
        }
        open[target, default: 1] -= 1
        if let next = waiting[target]?.popFirst() { execute(next, target: target) }
    }

    private func connect(_ target: LoopTarget, localAddress: String?) -> EventLoopFuture<NIOLoopBound<LoopExchangeHandler>> {
        var bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // The handler writes and reads HTTP/1.1 itself (no NIO codec): see LoopResponseParser.
                    try channel.pipeline.syncOperations.addHandler(LoopExchangeHandler())
                }
            }
        if let localAddress {
            do {
                bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: localAddress, port: 0))
            } catch {
                return loop.makeFailedFuture(TransportError(code: "invalid_request", message: "local address \(localAddress): \(error)"))
            }
        }
        return bootstrap.connect(host: target.host, port: target.port).flatMapThrowing { channel in
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: LoopExchangeHandler.self), eventLoop: channel.eventLoop)
        }.flatMapErrorThrowing { error in
            throw error as? TransportError ?? TransportError(code: "connect_failed", message: "\(target.host):\(target.port): \(error)")
        }
    }
}
