/// The PostgreSQL schema: ``Schema/migrations`` rendered in PostgreSQL's types (`DOUBLE PRECISION` times, `BIGINT`
/// counts, `BOOLEAN` flags, `BYTEA` keys; an upload's decrypted `content` is `BYTEA` (UTF-8), since a device's file may
/// hold NUL characters, which PostgreSQL's text cannot). Applied migrations are recorded by name in `trio_migrations`;
/// several instances starting at once take turns (an advisory lock).
enum PostgresSchema {
    /// `(name, statements)` in order.
    static let migrations: [(name: String, statements: [String])] = Schema.migrations.map { ($0.name, SQLDialect.postgres.statements($0)) }

    /// The names earlier releases recorded, before both dialects shared one description: PostgreSQL's `v1` created what
    /// SQLite's first five migrations had by then, and its `v2-resend` is `v6-resend`. A database they migrated has the
    /// same tables, columns and indexes (the PostgreSQL suite checks it).
    static let formerNames: [String: [String]] = [
        "v1": ["v1", "v2-retry-count", "v3-study-interventions", "v4-features", "v5-push-relay-message-id"],
        "v2-resend": ["v6-resend"],
    ]

    /// The migrations a database that recorded `recorded` has applied, in today's names.
    static func applied(_ recorded: some Sequence<String>) -> Set<String> {
        Set(recorded.flatMap { formerNames[$0] ?? [$0] })
    }
}
