import HTTPTypes
import Hummingbird
import Synchronization

/// The routes a router serves, as path templates and methods: tells a 405 (the path exists with other methods) from a
/// 404, and is what the API documents are compared with.
package struct RouteTable: Sendable, Equatable {
    /// One route: a template such as `/__admin/studies/{study_id}` and its method.
    package struct Route: Sendable, Hashable, Comparable, CustomStringConvertible {
        package var method: String
        package var path: String
        package init(method: String, path: String) {
            self.method = method
            self.path = path
        }
        package var description: String { "\(method) \(path)" }
        package static func < (a: Route, b: Route) -> Bool { (a.path, a.method) < (b.path, b.method) }
    }

    package private(set) var routes: [Route]

    package init(_ routes: [Route]) { self.routes = routes.sorted() }

    /// The routes of a Hummingbird router.
    package init<Context>(_ router: Router<Context>) {
        self.init(router.routes.map { Route(method: $0.method.rawValue, path: $0.path.description) })
    }

    /// Methods served on `path` (sorted); empty when no template matches it.
    package func methods(for path: String) -> [String] {
        let segments = Self.segments(path)
        return Array(Set(routes.filter { Self.matches(template: Self.segments($0.path), segments) }.map(\.method))).sorted()
    }

    static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    static func matches(template: [Substring], _ path: [Substring]) -> Bool {
        var i = 0
        for (index, part) in template.enumerated() {
            if part == "**" { return true }
            guard i < path.count else { return false }
            let isParameter = part == "*" || (part.hasPrefix("{") && part.hasSuffix("}")) || part.hasPrefix(":")
            if !isParameter, part != path[i] {
                // `{name}` inside a segment (`messages:send`) is matched as text around it.
                guard part.contains("{") || part.contains(":"), Self.matchesPattern(part, path[i]) else { return false }
            }
            i += 1
            if index == template.count - 1 { return i == path.count }
        }
        return template.isEmpty && path.isEmpty
    }

    /// `{project}`-style parameters inside a segment: the literal text around them must match.
    private static func matchesPattern(_ template: Substring, _ segment: Substring) -> Bool {
        guard let open = template.firstIndex(of: "{"), let close = template[open...].firstIndex(of: "}") else { return template == segment }
        let prefix = template[..<open]
        let suffix = template[template.index(after: close)...]
        return segment.hasPrefix(prefix) && segment.hasSuffix(suffix) && segment.count >= prefix.count + suffix.count
    }
}

/// A route table filled in once the router is complete (middleware is added before the routes it wraps).
package final class RouteTableBox: Sendable {
    private let value = Mutex(RouteTable([]))
    package init() {}
    package var table: RouteTable { value.withLock { $0 } }
    package func set(_ table: RouteTable) { value.withLock { $0 = table } }
}
