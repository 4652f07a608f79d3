/// A weak reference that can be sent to other tasks: the loops reach the client through one, so they never keep it
/// alive between calls.
struct WeakReference<Object: AnyObject & Sendable>: Sendable {
    private(set) weak var object: Object?

    init(_ object: Object) { self.object = object }
}
