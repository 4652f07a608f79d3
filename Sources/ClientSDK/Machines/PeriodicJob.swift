extension BackgroundTasks {
    /// Runs `tick` on `client` again and again, waiting between calls as long as the previous call returned (nil ends
    /// the loop); the first call comes after `firstWait` (at once when zero). The client is held for each call only,
    /// never across a wait: a client dropped without `close()` ends the loop (and is freed).
    ///
    /// The heartbeat, the device's schedule, the session heartbeat and the retries of app-handed pushes are such loops.
    @discardableResult
    func periodic<Client: AnyObject & Sendable>(on client: Client, firstWait: Duration,
                                                _ tick: @escaping @Sendable (Client) async -> Duration?) -> BackgroundJob {
        spawn { [weak client] in
            var wait = firstWait
            while !Task.isCancelled {
                if wait > .zero { try? await Task.sleep(for: wait) }
                guard !Task.isCancelled, let held = client, let next = await tick(held) else { return }
                wait = next
            }
        }
    }
}
