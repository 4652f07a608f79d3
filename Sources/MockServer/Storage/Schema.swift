import GRDB

/// The store's schema, once for every backend: named migrations of dialect-neutral steps (``SchemaMigration``), which
/// ``SQLDialect`` renders for SQLite (applied by GRDB's migrator) and PostgreSQL (``PostgresSchema``).
enum Schema {
    /// Every migration, in order. Never edit one a release has applied: add another at the end.
    static let migrations: [SchemaMigration] = [
        SchemaMigration("v1", [
            .createTable(TableDescription("study", [
                .text("id", .primaryKey),
                .text("name"),
                .text("timezone"),
                .text("scheduling", .oneOf(["server", "device"])),
                .text("device_settings"),
                .integer("max_delay_minutes"),
                .flag("per_participant_keys"),
                .text("clock_mode", .oneOf(["real", "frozen"])),
                .double("frozen_at", .nullable),
                .bytes("private_key"),
                .double("created_at"),
            ])),
            .createTable(TableDescription("participant", [
                .text("patient_id", .primaryKey),
                .text("study_id", .references(table: "study", column: "id")),
                .text("password_record"),
                .bytes("private_key", .nullable),
                .double("registered_at", .nullable),
                .double("last_registered_at", .nullable),
                .text("timezone", .nullable),
                .flag("timezone_fallback", .defaultZero),
                .text("reported_timezone", .nullable),
                .text("push_token", .nullable, .unique),
                .double("token_unregistered_at", .nullable),
                .double("retry_after", .nullable),
                .text("device_id", .nullable),
                .text("os", .nullable),
                .text("version_code", .nullable),
                .text("version_name", .nullable),
                .text("os_version", .nullable),
                .text("device_status_report", .nullable),
                .text("device_info", .nullable),
                .double("materialized_through", .nullable),
                .double("last_heartbeat_at", .nullable),
                .flag("retired", .defaultZero),
            ], indexes: [("participant_study", ["study_id"])])),
            .createTable(TableDescription("survey", [
                .text("id", .primaryKey),
                .text("study_id", .references(table: "study", column: "id")),
                .text("name"),
                .text("survey_type"),
                .text("content"),
                .text("settings"),
                .text("schedules"),
                .flag("deleted", .defaultZero),
                .double("created_at"),
                .double("updated_at"),
            ], indexes: [("survey_study", ["study_id"])])),
            .createTable(TableDescription("intervention", [
                .text("patient_id", .references(table: "participant", column: "patient_id")),
                .text("name"),
                .text("date"),
            ], primaryKey: ["patient_id", "name"])),
            .createTable(TableDescription("occurrence", [
                .text("uuid", .primaryKey),
                .text("study_id"),
                .text("survey_id"),
                .text("patient_id"),
                .integer("schedule_index"),
                .double("due_at"),
                .text("local_time"),
                .text("status", .oneOf(["pending", "sent", "expired"])),
                .text("push_uuid", .nullable),
            ], indexes: [("occurrence_due", ["study_id", "status", "due_at"]),
                         ("occurrence_participant", ["patient_id", "status"]),
                         ("occurrence_survey", ["survey_id", "status"])])),
            .createTable(TableDescription("push", [
                .sequence("seq"),
                .text("uuid", .unique),
                .text("study_id"),
                .text("patient_id"),
                .text("survey_ids"),
                .text("schedule_uuids"),
                .double("due_at"),
                .double("sent_at", .nullable),
                .text("status"),
                .integer("relay_status", .nullable),
                .text("relay_reason", .nullable),
                .text("nonce", .nullable),
            ], indexes: [("push_study", ["study_id", "patient_id"])])),
            .createTable(TableDescription("submission", [
                .sequence("seq"),
                .text("study_id"),
                .text("patient_id"),
                .text("survey_id"),
                .text("file_name"),
                .double("received_at"),
                .text("answers"),
            ], unique: ["patient_id", "file_name"], indexes: [("submission_study", ["study_id", "patient_id"])])),
            .createTable(TableDescription("upload", [
                .sequence("seq"),
                .text("patient_id"),
                .text("file_name"),
                .text("stream"),
                .double("received_at"),
                .integer("lines"),
                .integer("bad_lines"),
                .deviceText("content"),
            ], unique: ["patient_id", "file_name"])),
            .createTable(TableDescription("telemetry", [
                .sequence("seq"),
                .text("document_id", .unique),
                .text("app_id"),
                .text("ping"),
                .text("schema_version"),
                .text("client_id"),
                .double("received_at"),
                .text("body"),
            ], indexes: [("telemetry_client", ["client_id"])])),
            .createTable(TableDescription("heartbeat", [
                .sequence("seq"),
                .text("patient_id"),
                .double("at"),
                .text("message", .nullable),
            ])),
            .createTable(TableDescription("notification_report", [
                .text("patient_id"),
                .text("uuid"),
                .double("at"),
            ], primaryKey: ["patient_id", "uuid"])),
        ]),
        SchemaMigration("v2-retry-count", [
            .addColumn(table: "participant", .integer("retry_count", .defaultZero)),
        ]),
        SchemaMigration("v3-study-interventions", [
            .createTable(TableDescription("study_intervention", [
                .text("study_id", .references(table: "study", column: "id")),
                .text("name"),
            ], primaryKey: ["study_id", "name"])),
        ]),
        SchemaMigration("v4-features", [
            .createTable(TableDescription("feature", [
                .text("app_id"),
                .text("feature_id"),
                .text("config"),
                .double("updated_at"),
            ], primaryKey: ["app_id", "feature_id"])),
        ]),
        SchemaMigration("v5-push-relay-message-id", [
            .addColumn(table: "push", .text("relay_message_id", .nullable)),
        ]),
        // Beiwe's resend of unconfirmed pushes (issue 50): each sent occurrence's next resend moment, and which pushes
        // were resends.
        SchemaMigration("v6-resend", [
            .addColumn(table: "occurrence", .double("resend_at", .nullable)),
            .createIndex(IndexDescription("occurrence_resend", on: "occurrence", ["study_id", "resend_at"], where: "resend_at IS NOT NULL")),
            .addColumn(table: "push", .flag("resend", .defaultZero)),
        ]),
    ]

    /// Every table, children before parents (the order `wipe` deletes in): the reverse of the order they are created in.
    static let tables: [String] = migrations.flatMap(\.steps).compactMap { step -> String? in
        if case .createTable(let table) = step { table.name } else { nil }
    }.reversed()

    /// The SQLite migrations, as GRDB's migrator (it records each applied name in `grdb_migrations`).
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in migrations {
            let statements = SQLDialect.sqlite.statements(migration)
            migrator.registerMigration(migration.name) { db in
                for statement in statements { try db.execute(sql: statement) }
            }
        }
        return migrator
    }
}
