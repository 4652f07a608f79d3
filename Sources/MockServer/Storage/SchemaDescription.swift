/// The store's schema described once, as values, from which each dialect's DDL is rendered (``SQLDialect``): a new table
/// or column is one change in ``Schema/migrations``, and a third backend is one more dialect.

/// What a column holds; each dialect picks the type (``SQLDialect/type(of:)``).
enum ColumnKind: Sendable, Equatable {
    /// Text that never holds a NUL character.
    case text
    /// A 64-bit integer.
    case integer
    /// A time or other measurement, a double.
    case double
    /// A yes/no flag: SQLite's 0/1 integer, PostgreSQL's `BOOLEAN`.
    case flag
    /// Raw bytes (keys).
    case bytes
    /// Text a device wrote, which may hold NUL characters: SQLite's `TEXT`, PostgreSQL's `BYTEA` (UTF-8), since its text
    /// type cannot hold NUL.
    case deviceText
    /// The row's arrival order, assigned by the database: the table's primary key.
    case sequence
}

/// One column of a ``TableDescription``.
struct ColumnDescription: Sendable, Equatable {
    /// A property beyond the column's kind.
    enum Option: Sendable, Equatable {
        /// The column may be NULL (columns are NOT NULL unless they say so).
        case nullable
        /// The column alone is the table's primary key.
        case primaryKey
        /// No two rows hold the same value.
        case unique
        /// A new row, or a row the column is added to, holds zero (false for a flag).
        case defaultZero
        /// The value is one of these.
        case oneOf([String])
        /// The value names a row of `table` by its `column`; deleting that row deletes this one.
        case references(table: String, column: String)
    }

    let name: String
    let kind: ColumnKind
    let options: [Option]

    init(_ name: String, _ kind: ColumnKind, _ options: [Option] = []) {
        self.name = name
        self.kind = kind
        self.options = options
    }

    static func text(_ name: String, _ options: Option...) -> Self { Self(name, .text, options) }
    static func integer(_ name: String, _ options: Option...) -> Self { Self(name, .integer, options) }
    static func double(_ name: String, _ options: Option...) -> Self { Self(name, .double, options) }
    static func flag(_ name: String, _ options: Option...) -> Self { Self(name, .flag, options) }
    static func bytes(_ name: String, _ options: Option...) -> Self { Self(name, .bytes, options) }
    static func deviceText(_ name: String, _ options: Option...) -> Self { Self(name, .deviceText, options) }
    static func sequence(_ name: String) -> Self { Self(name, .sequence) }

    var isNullable: Bool { options.contains(.nullable) }
}

/// An index on a table, optionally partial (`condition` is SQL both dialects read alike, such as `x IS NOT NULL`).
struct IndexDescription: Sendable, Equatable {
    let name: String
    let table: String
    let columns: [String]
    let condition: String?

    init(_ name: String, on table: String, _ columns: [String], where condition: String? = nil) {
        self.name = name
        self.table = table
        self.columns = columns
        self.condition = condition
    }
}

/// A table: its columns in order, a primary key over several columns or a uniqueness rule if it has one, and the
/// indexes created with it.
struct TableDescription: Sendable, Equatable {
    let name: String
    let columns: [ColumnDescription]
    let primaryKey: [String]
    let unique: [String]
    let indexes: [IndexDescription]

    init(_ name: String, _ columns: [ColumnDescription], primaryKey: [String] = [], unique: [String] = [],
         indexes: [(name: String, columns: [String])] = []) {
        self.name = name
        self.columns = columns
        self.primaryKey = primaryKey
        self.unique = unique
        self.indexes = indexes.map { IndexDescription($0.name, on: name, $0.columns) }
    }
}

/// One change to the schema.
enum SchemaStep: Sendable, Equatable {
    /// A new table, then its indexes.
    case createTable(TableDescription)
    /// A column added to an existing table (NOT NULL columns need ``ColumnDescription/Option/defaultZero``).
    case addColumn(table: String, ColumnDescription)
    case createIndex(IndexDescription)
}

/// A named migration: its steps run in one transaction, once per database, in the order of ``Schema/migrations``.
/// Never edit one a release has applied: add another.
struct SchemaMigration: Sendable, Equatable {
    let name: String
    let steps: [SchemaStep]

    init(_ name: String, _ steps: [SchemaStep]) {
        self.name = name
        self.steps = steps
    }
}
