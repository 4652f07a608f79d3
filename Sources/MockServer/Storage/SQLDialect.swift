/// A database's spelling of the schema: renders ``SchemaMigration``s into the statements that dialect runs.
enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// The statements of `migration`, in order.
    func statements(_ migration: SchemaMigration) -> [String] {
        migration.steps.flatMap(statements(_:))
    }

    func statements(_ step: SchemaStep) -> [String] {
        switch step {
        case .createTable(let table):
            [createTable(table)] + table.indexes.map(createIndex(_:))
        case .addColumn(let table, let column):
            ["ALTER TABLE \(table) ADD COLUMN \(definition(column))"]
        case .createIndex(let index):
            [createIndex(index)]
        }
    }

    func createTable(_ table: TableDescription) -> String {
        var lines = table.columns.map(definition(_:))
        if !table.primaryKey.isEmpty { lines.append("PRIMARY KEY (\(table.primaryKey.joined(separator: ", ")))") }
        if !table.unique.isEmpty { lines.append("UNIQUE (\(table.unique.joined(separator: ", ")))") }
        return "CREATE TABLE \(table.name) (\n    " + lines.joined(separator: ",\n    ") + "\n)"
    }

    func createIndex(_ index: IndexDescription) -> String {
        "CREATE INDEX \(index.name) ON \(index.table)(\(index.columns.joined(separator: ", ")))"
            + (index.condition.map { " WHERE \($0)" } ?? "")
    }

    /// The column's type in this dialect.
    func type(of kind: ColumnKind) -> String {
        switch (self, kind) {
        case (_, .text): "TEXT"
        case (.sqlite, .integer), (.sqlite, .flag): "INTEGER"
        case (.postgres, .integer): "BIGINT"
        case (.postgres, .flag): "BOOLEAN"
        case (.sqlite, .double): "DOUBLE"
        case (.postgres, .double): "DOUBLE PRECISION"
        case (.sqlite, .bytes): "BLOB"
        case (.postgres, .bytes), (.postgres, .deviceText): "BYTEA"
        case (.sqlite, .deviceText): "TEXT"
        case (.sqlite, .sequence): "INTEGER PRIMARY KEY AUTOINCREMENT"
        case (.postgres, .sequence): "BIGSERIAL PRIMARY KEY"
        }
    }

    /// `name TYPE` and its constraints, in the order both dialects accept.
    func definition(_ column: ColumnDescription) -> String {
        var parts = [column.name, type(of: column.kind)]
        if column.kind == .sequence { return parts.joined(separator: " ") }
        if column.options.contains(.primaryKey) { parts.append("PRIMARY KEY") } else if !column.isNullable { parts.append("NOT NULL") }
        for option in column.options {
            switch option {
            case .defaultZero: parts.append("DEFAULT " + (self == .postgres && column.kind == .flag ? "FALSE" : "0"))
            case .unique: parts.append("UNIQUE")
            case .oneOf(let values): parts.append("CHECK (\(column.name) IN (\(values.map { "'" + $0.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'" }.joined(separator: ", "))))")
            case .references(let table, let other): parts.append("REFERENCES \(table)(\(other)) ON DELETE CASCADE")
            case .nullable, .primaryKey: break
            }
        }
        return parts.joined(separator: " ")
    }
}
