import NIOCore

/// A Swift task executor that runs jobs on one NIO event loop.
///
/// A request task started with this executor preference runs on its connection's event loop, and so do the default
/// actors it calls while they are free: a request that reads, awaits an actor and writes its answer does all of it on
/// one thread, instead of waking a thread of Swift's cooperative pool and then the event loop again (each wake a
/// futex or eventfd write and a context switch). Work that suspends on something else (a database commit, another
/// event loop's actor) comes back through `execute`, which wakes the loop only when called from another thread.
package final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop every job runs on.
    package let eventLoop: any EventLoop

    /// An executor for `eventLoop`.
    package init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `job` on the event loop (queued behind what the loop is doing; a wake-up only from another thread).
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
