/// The schema as releases up to 0.2 and this one's first builds wrote it, by hand, once per dialect: kept verbatim so the
/// tests show that ``Schema/migrations`` builds the same databases, and that databases those builds made open unchanged.
enum FormerSchema {
    /// SQLite's migrations, `(name, SQL)`, as GRDB applied them.
    static let sqlite: [(String, String)] = [
        ("v1", """
            CREATE TABLE study (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                timezone TEXT NOT NULL,
                scheduling TEXT NOT NULL CHECK (scheduling IN ('server', 'device')),
                device_settings TEXT NOT NULL,
                max_delay_minutes INTEGER NOT NULL,
                per_participant_keys INTEGER NOT NULL,
                clock_mode TEXT NOT NULL CHECK (clock_mode IN ('real', 'frozen')),
                frozen_at DOUBLE,
                private_key BLOB NOT NULL,
                created_at DOUBLE NOT NULL
            );
            CREATE TABLE participant (
                patient_id TEXT PRIMARY KEY,
                study_id TEXT NOT NULL REFERENCES study(id) ON DELETE CASCADE,
                password_record TEXT NOT NULL,
                private_key BLOB,
                registered_at DOUBLE,
                last_registered_at DOUBLE,
                timezone TEXT,
                timezone_fallback INTEGER NOT NULL DEFAULT 0,
                reported_timezone TEXT,
                push_token TEXT UNIQUE,
                token_unregistered_at DOUBLE,
                retry_after DOUBLE,
                device_id TEXT,
                os TEXT,
                version_code TEXT,
                version_name TEXT,
                os_version TEXT,
                device_status_report TEXT,
                device_info TEXT,
                materialized_through DOUBLE,
                last_heartbeat_at DOUBLE,
                retired INTEGER NOT NULL DEFAULT 0
            );
            CREATE INDEX participant_study ON participant(study_id);
            CREATE TABLE survey (
                id TEXT PRIMARY KEY,
                study_id TEXT NOT NULL REFERENCES study(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                survey_type TEXT NOT NULL,
                content TEXT NOT NULL,
                settings TEXT NOT NULL,
                schedules TEXT NOT NULL,
                deleted INTEGER NOT NULL DEFAULT 0,
                created_at DOUBLE NOT NULL,
                updated_at DOUBLE NOT NULL
            );
            CREATE INDEX survey_study ON survey(study_id);
            CREATE TABLE intervention (
                patient_id TEXT NOT NULL REFERENCES participant(patient_id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                date TEXT NOT NULL,
                PRIMARY KEY (patient_id, name)
            );
            CREATE TABLE occurrence (
                uuid TEXT PRIMARY KEY,
                study_id TEXT NOT NULL,
                survey_id TEXT NOT NULL,
                patient_id TEXT NOT NULL,
                schedule_index INTEGER NOT NULL,
                due_at DOUBLE NOT NULL,
                local_time TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'expired')),
                push_uuid TEXT
            );
            CREATE INDEX occurrence_due ON occurrence(study_id, status, due_at);
            CREATE INDEX occurrence_participant ON occurrence(patient_id, status);
            CREATE INDEX occurrence_survey ON occurrence(survey_id, status);
            CREATE TABLE push (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                uuid TEXT NOT NULL UNIQUE,
                study_id TEXT NOT NULL,
                patient_id TEXT NOT NULL,
                survey_ids TEXT NOT NULL,
                schedule_uuids TEXT NOT NULL,
                due_at DOUBLE NOT NULL,
                sent_at DOUBLE,
                status TEXT NOT NULL,
                relay_status INTEGER,
                relay_reason TEXT,
                nonce TEXT
            );
            CREATE INDEX push_study ON push(study_id, patient_id);
            CREATE TABLE submission (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                study_id TEXT NOT NULL,
                patient_id TEXT NOT NULL,
                survey_id TEXT NOT NULL,
                file_name TEXT NOT NULL,
                received_at DOUBLE NOT NULL,
                answers TEXT NOT NULL,
                UNIQUE (patient_id, file_name)
            );
            CREATE INDEX submission_study ON submission(study_id, patient_id);
            CREATE TABLE upload (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                patient_id TEXT NOT NULL,
                file_name TEXT NOT NULL,
                stream TEXT NOT NULL,
                received_at DOUBLE NOT NULL,
                lines INTEGER NOT NULL,
                bad_lines INTEGER NOT NULL,
                content TEXT NOT NULL,
                UNIQUE (patient_id, file_name)
            );
            CREATE TABLE telemetry (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                document_id TEXT NOT NULL UNIQUE,
                app_id TEXT NOT NULL,
                ping TEXT NOT NULL,
                schema_version TEXT NOT NULL,
                client_id TEXT NOT NULL,
                received_at DOUBLE NOT NULL,
                body TEXT NOT NULL
            );
            CREATE INDEX telemetry_client ON telemetry(client_id);
            CREATE TABLE heartbeat (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                patient_id TEXT NOT NULL,
                at DOUBLE NOT NULL,
                message TEXT
            );
            CREATE TABLE notification_report (
                patient_id TEXT NOT NULL,
                uuid TEXT NOT NULL,
                at DOUBLE NOT NULL,
                PRIMARY KEY (patient_id, uuid)
            );
            """),
        ("v2-retry-count", "ALTER TABLE participant ADD COLUMN retry_count INTEGER NOT NULL DEFAULT 0"),
        ("v3-study-interventions", """
            CREATE TABLE study_intervention (
                study_id TEXT NOT NULL REFERENCES study(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                PRIMARY KEY (study_id, name)
            )
            """),
        ("v4-features", """
            CREATE TABLE feature (
                app_id TEXT NOT NULL,
                feature_id TEXT NOT NULL,
                config TEXT NOT NULL,
                updated_at DOUBLE NOT NULL,
                PRIMARY KEY (app_id, feature_id)
            )
            """),
        ("v5-push-relay-message-id", "ALTER TABLE push ADD COLUMN relay_message_id TEXT"),
        ("v6-resend", """
            ALTER TABLE occurrence ADD COLUMN resend_at DOUBLE;
            CREATE INDEX occurrence_resend ON occurrence(study_id, resend_at) WHERE resend_at IS NOT NULL;
            ALTER TABLE push ADD COLUMN resend INTEGER NOT NULL DEFAULT 0;
            """),
    ]

    /// PostgreSQL's migrations, `(name, statements)`, recorded in `trio_migrations`.
    static let postgres: [(String, [String])] = [
        ("v1", [
            """
            CREATE TABLE study (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                timezone TEXT NOT NULL,
                scheduling TEXT NOT NULL CHECK (scheduling IN ('server', 'device')),
                device_settings TEXT NOT NULL,
                max_delay_minutes BIGINT NOT NULL,
                per_participant_keys BOOLEAN NOT NULL,
                clock_mode TEXT NOT NULL CHECK (clock_mode IN ('real', 'frozen')),
                frozen_at DOUBLE PRECISION,
                private_key BYTEA NOT NULL,
                created_at DOUBLE PRECISION NOT NULL
            )
            """,
            """
            CREATE TABLE participant (
                patient_id TEXT PRIMARY KEY,
                study_id TEXT NOT NULL REFERENCES study(id) ON DELETE CASCADE,
                password_record TEXT NOT NULL,
                private_key BYTEA,
                registered_at DOUBLE PRECISION,
                last_registered_at DOUBLE PRECISION,
                timezone TEXT,
                timezone_fallback BOOLEAN NOT NULL DEFAULT FALSE,
                reported_timezone TEXT,
                push_token TEXT UNIQUE,
                token_unregistered_at DOUBLE PRECISION,
                retry_after DOUBLE PRECISION,
                retry_count BIGINT NOT NULL DEFAULT 0,
                device_id TEXT,
                os TEXT,
                version_code TEXT,
                version_name TEXT,
                os_version TEXT,
                device_status_report TEXT,
                device_info TEXT,
                materialized_through DOUBLE PRECISION,
                last_heartbeat_at DOUBLE PRECISION,
                retired BOOLEAN NOT NULL DEFAULT FALSE
            )
            """,
            "CREATE INDEX participant_study ON participant(study_id)",
            """
            CREATE TABLE study_intervention (
                study_id TEXT NOT NULL REFERENCES study(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                PRIMARY KEY (study_id, name)
            )
            """,
            """
            CREATE TABLE survey (
                id TEXT PRIMARY KEY,
                study_id TEXT NOT NULL REFERENCES study(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                survey_type TEXT NOT NULL,
                content TEXT NOT NULL,
                settings TEXT NOT NULL,
                schedules TEXT NOT NULL,
                deleted BOOLEAN NOT NULL DEFAULT FALSE,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )
            """,
            "CREATE INDEX survey_study ON survey(study_id)",
            """
            CREATE TABLE intervention (
                patient_id TEXT NOT NULL REFERENCES participant(patient_id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                date TEXT NOT NULL,
                PRIMARY KEY (patient_id, name)
            )
            """,
            """
            CREATE TABLE occurrence (
                uuid TEXT PRIMARY KEY,
                study_id TEXT NOT NULL,
                survey_id TEXT NOT NULL,
                patient_id TEXT NOT NULL,
                schedule_index BIGINT NOT NULL,
                due_at DOUBLE PRECISION NOT NULL,
                local_time TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'expired')),
                push_uuid TEXT
            )
            """,
            "CREATE INDEX occurrence_due ON occurrence(study_id, status, due_at)",
            "CREATE INDEX occurrence_participant ON occurrence(patient_id, status)",
            "CREATE INDEX occurrence_survey ON occurrence(survey_id, status)",
            """
            CREATE TABLE push (
                seq BIGSERIAL PRIMARY KEY,
                uuid TEXT NOT NULL UNIQUE,
                study_id TEXT NOT NULL,
                patient_id TEXT NOT NULL,
                survey_ids TEXT NOT NULL,
                schedule_uuids TEXT NOT NULL,
                due_at DOUBLE PRECISION NOT NULL,
                sent_at DOUBLE PRECISION,
                status TEXT NOT NULL,
                relay_status BIGINT,
                relay_reason TEXT,
                nonce TEXT,
                relay_message_id TEXT
            )
            """,
            "CREATE INDEX push_study ON push(study_id, patient_id)",
            """
            CREATE TABLE submission (
                seq BIGSERIAL PRIMARY KEY,
                study_id TEXT NOT NULL,
                patient_id TEXT NOT NULL,
                survey_id TEXT NOT NULL,
                file_name TEXT NOT NULL,
                received_at DOUBLE PRECISION NOT NULL,
                answers TEXT NOT NULL,
                UNIQUE (patient_id, file_name)
            )
            """,
            "CREATE INDEX submission_study ON submission(study_id, patient_id)",
            """
            CREATE TABLE upload (
                seq BIGSERIAL PRIMARY KEY,
                patient_id TEXT NOT NULL,
                file_name TEXT NOT NULL,
                stream TEXT NOT NULL,
                received_at DOUBLE PRECISION NOT NULL,
                lines BIGINT NOT NULL,
                bad_lines BIGINT NOT NULL,
                content BYTEA NOT NULL,
                UNIQUE (patient_id, file_name)
            )
            """,
            """
            CREATE TABLE telemetry (
                seq BIGSERIAL PRIMARY KEY,
                document_id TEXT NOT NULL UNIQUE,
                app_id TEXT NOT NULL,
                ping TEXT NOT NULL,
                schema_version TEXT NOT NULL,
                client_id TEXT NOT NULL,
                received_at DOUBLE PRECISION NOT NULL,
                body TEXT NOT NULL
            )
            """,
            "CREATE INDEX telemetry_client ON telemetry(client_id)",
            """
            CREATE TABLE heartbeat (
                seq BIGSERIAL PRIMARY KEY,
                patient_id TEXT NOT NULL,
                at DOUBLE PRECISION NOT NULL,
                message TEXT
            )
            """,
            """
            CREATE TABLE notification_report (
                patient_id TEXT NOT NULL,
                uuid TEXT NOT NULL,
                at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (patient_id, uuid)
            )
            """,
            """
            CREATE TABLE feature (
                app_id TEXT NOT NULL,
                feature_id TEXT NOT NULL,
                config TEXT NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (app_id, feature_id)
            )
            """,
        ]),
        // Beiwe's resend of unconfirmed pushes (issue 50): each sent occurrence's next resend moment, and which pushes
        // were resends.
        ("v2-resend", [
            "ALTER TABLE occurrence ADD COLUMN resend_at DOUBLE PRECISION",
            "CREATE INDEX occurrence_resend ON occurrence(study_id, resend_at) WHERE resend_at IS NOT NULL",
            "ALTER TABLE push ADD COLUMN resend BOOLEAN NOT NULL DEFAULT false",
        ]),
    ]
}
