import Foundation
import GRDB
import Logging
import PostgresNIO
import Testing
import TrioTesting
@testable import MockServer

/// The one schema description (``Schema/migrations``) against the databases the hand-written migrations of earlier
/// releases built (``FormerSchema``), in both dialects: the same tables, columns, types, defaults, constraints and indexes,
/// and a database those releases made opens with nothing to apply.
@Suite struct SchemaTests {
    // MARK: SQLite

    /// A database the former migrations built, as GRDB recorded them.
    static func formerSQLite() throws -> DatabaseQueue {
        var migrator = DatabaseMigrator()
        for (name, sql) in FormerSchema.sqlite { migrator.registerMigration(name) { db in try db.execute(sql: sql) } }
        let queue = try DatabaseQueue()
        try migrator.migrate(queue)
        return queue
    }

    /// Everything SQLite knows of the schema, as comparable lines: each object's SQL (whitespace folded), and each table's
    /// columns, indexes and foreign keys as its pragmas list them.
    static func describe(_ queue: DatabaseQueue) throws -> [String] {
        try queue.read { db in
            var lines: [String] = []
            let objects = try Row.fetchAll(db, sql: """
                SELECT type, name, tbl_name, sql FROM sqlite_master
                WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY type, name
                """)
            for object in objects {
                let sql: String? = object["sql"]
                lines.append("\(object["type"] as String) \(object["name"] as String): \(sql.map(fold) ?? "-")")
            }
            for table in objects where (table["type"] as String) == "table" {
                let name: String = table["name"]
                for column in try Row.fetchAll(db, sql: "PRAGMA table_xinfo(\(name))") { lines.append("\(name) column \(column)") }
                for index in try Row.fetchAll(db, sql: "PRAGMA index_list(\(name))") {
                    let indexName: String = index["name"]
                    let columns = try Row.fetchAll(db, sql: "PRAGMA index_xinfo(\(indexName))").map(\.description)
                    lines.append("\(name) index \(index) \(columns)")
                }
                for key in try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\(name))") { lines.append("\(name) references \(key)") }
            }
            return lines
        }
    }

    /// Only the lines that differ, for a failure's message.
    static func changes(from former: [String], to described: [String]) -> String {
        described.difference(from: former).map { change in
            switch change {
            case .remove(_, let line, _): "former only: \(line)"
            case .insert(_, let line, _): "described only: \(line)"
            }
        }.joined(separator: "\n")
    }

    /// Runs of whitespace as one space, none inside parentheses' edges: formatting is not schema.
    static func fold(_ sql: String) -> String {
        sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            .replacingOccurrences(of: "( ", with: "(").replacingOccurrences(of: " )", with: ")")
    }

    @Test func theDescriptionBuildsTheSQLiteDatabaseTheFormerMigrationsBuilt() throws {
        let today = try DatabaseQueue()
        try Schema.migrator().migrate(today)
        let former = try Self.describe(try Self.formerSQLite())
        let described = try Self.describe(today)
        #expect(former.count > 100)
        let differences = Self.changes(from: former, to: described)
        #expect(differences.isEmpty)
    }

    @Test func aSQLiteDatabaseTheFormerMigrationsBuiltHasNothingToApply() throws {
        let queue = try Self.formerSQLite()
        let migrator = Schema.migrator()
        #expect(try queue.read { try migrator.hasCompletedMigrations($0) })
        #expect(try queue.read { try migrator.appliedIdentifiers($0) } == Set(Schema.migrations.map(\.name)))
    }

    @Test func tablesListsEveryTableChildrenBeforeParents() throws {
        let queue = try DatabaseQueue()
        try Schema.migrator().migrate(queue)
        try queue.read { db in
            let names = try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'
                """)
            #expect(Set(Schema.tables) == Set(names) && Schema.tables.count == names.count)
            for table in Schema.tables {
                for parent in try String.fetchAll(db, sql: "SELECT \"table\" FROM pragma_foreign_key_list(?)", arguments: [table]) {
                    let child = try #require(Schema.tables.firstIndex(of: table))
                    #expect(child < (Schema.tables.firstIndex(of: parent) ?? -1), "\(table) is wiped after its parent \(parent)")
                }
            }
        }
    }

    // MARK: The dialects

    @Test func eachKindHasATypeInEachDialectAndNotNullUnlessNullable() {
        let column = ColumnDescription.flag("retired", .defaultZero)
        #expect(SQLDialect.sqlite.definition(column) == "retired INTEGER NOT NULL DEFAULT 0")
        #expect(SQLDialect.postgres.definition(column) == "retired BOOLEAN NOT NULL DEFAULT FALSE")
        #expect(SQLDialect.postgres.definition(.sequence("seq")) == "seq BIGSERIAL PRIMARY KEY")
        #expect(SQLDialect.sqlite.definition(.deviceText("content")) == "content TEXT NOT NULL")
        #expect(SQLDialect.postgres.definition(.deviceText("content")) == "content BYTEA NOT NULL")
        #expect(SQLDialect.sqlite.definition(.text("status", .oneOf(["a", "it's"]))) == "status TEXT NOT NULL CHECK (status IN ('a', 'it''s'))")
        #expect(SQLDialect.postgres.definition(.text("push_token", .nullable, .unique)) == "push_token TEXT UNIQUE")
    }

    @Test func postgresReadsTheFormerMigrationNamesAsToday() {
        let every = Set(Schema.migrations.map(\.name))
        #expect(PostgresSchema.applied(FormerSchema.postgres.map(\.0)) == every)
        #expect(PostgresSchema.applied(every) == every)
        #expect(PostgresSchema.applied(["v1"]) == every.subtracting(["v6-resend"]))
        #expect(Set(PostgresSchema.formerNames.values.joined()).isSubset(of: every))
    }

    // MARK: PostgreSQL

    /// The schema of the store's database as PostgreSQL reports it: columns (by name: a former database added none
    /// after its first migration, so its column order differs), indexes and constraints in PostgreSQL's own spelling.
    static func describe(_ store: PostgresStore) async throws -> [String] {
        var lines: [String] = []
        for query in [
            """
            SELECT table_name || '.' || column_name || ' ' || data_type || ' nullable=' || is_nullable || ' default=' ||
                   coalesce(column_default, '-') FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name <> 'trio_migrations' ORDER BY 1
            """,
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'trio_migrations' ORDER BY 1",
            """
            SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
            WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> 'trio_migrations' ORDER BY 1
            """,
        ] {
            lines += try await store.rows(PostgresQuery(unsafeSQL: query)).map { try $0.decode(String.self) }
        }
        return lines
    }

    @Test(arguments: StoreKind.available.filter { $0 == .postgres })
    func theDescriptionBuildsThePostgresDatabaseTheFormerMigrationsBuiltAndOpensIt(_ kind: StoreKind) async throws {
        let logger = Logger(label: "schema-test")
        // A database as the former migrations left it, built with psql, as an earlier release would have.
        let formerURL = try await TestPostgres.createDatabase(prefix: "former")
        let script = FormerSchema.postgres.flatMap(\.1).joined(separator: ";\n") + """
            ;
            CREATE TABLE trio_migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
            INSERT INTO trio_migrations (name) VALUES \(FormerSchema.postgres.map { "('\($0.0)')" }.joined(separator: ", "));
            """
        let psql = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"),
                                              ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", formerURL, "-c", script])
        #expect(psql.status == 0, "\(psql.errors)")

        let former = try await PostgresStore.open(try PostgresURL(formerURL), metrics: nil, logger: logger)
        let today = try await PostgresStore.open(try PostgresURL(try await TestPostgres.createDatabase(prefix: "today")),
                                                 metrics: nil, logger: logger)
        do {
            // Opening the former database applied nothing: its records are still the two it had.
            let recorded = try await former.rows("SELECT name FROM trio_migrations ORDER BY name").map { try $0.decode(String.self) }
            #expect(recorded == ["v1", "v2-resend"])
            let todays = try await today.rows("SELECT name FROM trio_migrations ORDER BY name").map { try $0.decode(String.self) }
            #expect(Set(todays) == Set(Schema.migrations.map(\.name)))

            let formerSchema = try await Self.describe(former)
            let described = try await Self.describe(today)
            #expect(formerSchema.count > 100)
            let differences = Self.changes(from: formerSchema, to: described)
            #expect(differences.isEmpty)
        } catch {
            await former.close()
            await today.close()
            throw error
        }
        await former.close()
        await today.close()
    }
}
