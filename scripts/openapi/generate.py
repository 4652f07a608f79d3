#!/usr/bin/env python3
"""Writes the trio's OpenAPI 3.1 documents: docs/openapi/mock-server.json and docs/openapi/push-relay.json.

The documents are the API reference (served at GET /__admin/openapi.json and GET /__control/openapi.json, checked
against the routers by Tests/APIReferenceTests, fuzzed by schemathesis in scripts/test). Edit this file, run it, and
commit both: `python3 scripts/openapi/generate.py` (`--check` exits 1 when a committed document differs).
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = (ROOT / "Sources/SurveyWire/TrioVersion.swift").read_text().split('current = "')[1].split('"')[0]


def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def obj(props, required=(), extra=True, **more):
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    if not extra:
        schema["additionalProperties"] = False
    schema.update(more)
    return schema


def nullable(schema):
    """A request field Swift decodes as optional: `null` means absent."""
    return {"anyOf": [schema, {"type": "null"}]}


def req(props, required=(), extra=True, **more):
    """A request body object: its optional fields also take `null` (read as absent)."""
    return obj({key: value if key in required else nullable(value) for key, value in props.items()}, required, extra, **more)


def arr(items, **more):
    return {"type": "array", "items": items, **more}


S = {"type": "string"}
I = {"type": "integer"}
B = {"type": "boolean"}
N = {"type": "number"}
ANY = {}
TIME = {"type": "string", "description": "RFC 3339 UTC time"}
# Times and dates the servers read: RFC 3339, in the years 1970-2999 where the server limits them.
TIME_IN = {"type": "string", "format": "date-time"}
YEAR = "(19[7-9][0-9]|2[0-9]{3})"
TIME_LIMITED = {"type": "string", "format": "date-time", "pattern": f"^{YEAR}-", "description": "RFC 3339, years 1970-2999"}
DATE_LIMITED = {"type": "string", "format": "date", "pattern": f"^{YEAR}-", "description": "YYYY-MM-DD, years 1970-2999"}
NAME = {"type": "string", "minLength": 1, "maxLength": 200}
# Form fields never carry NUL (refused with 400 invalid_character).
NO_NUL = "^[^\\u0000]*$"
FORM_S = {"type": "string", "pattern": NO_NUL}
INT64 = {"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807}
NULLABLE_S = {"type": ["string", "null"]}


def json_body(schema, description=None):
    body = {"required": True, "content": {"application/json": {"schema": schema}}}
    if description:
        body["description"] = description
    return body


def ok(schema, status="200", description="OK", content_type="application/json"):
    return {status: {"description": description, "content": {content_type: {"schema": schema}}}}


def empty(status="204", description="Done; no body"):
    return {status: {"description": description}}


def errors(error_schema="Error", description="Refused: the error body names the problem (`error.code`)"):
    return {"default": {"description": description, "content": {"application/json": {"schema": ref(error_schema)}}}}


def op(summary, responses, body=None, params=(), tags=(), description=None):
    operation = {"summary": summary, "responses": responses}
    if description:
        operation["description"] = description
    if body:
        operation["requestBody"] = body
    if params:
        operation["parameters"] = list(params)
    if tags:
        operation["tags"] = list(tags)
    return operation


def path_param(name, description=None):
    param = {"name": name, "in": "path", "required": True, "schema": S}
    if description:
        param["description"] = description
    return param


def query(name, schema=S, description=None):
    param = {"name": name, "in": "query", "required": False, "schema": schema}
    if description:
        param["description"] = description
    return param


COMMON_SCHEMAS = {
    "Error": obj({"error": obj({"code": {"type": "string", "pattern": "^[a-z0-9_]+$"}, "message": S, "field": S},
                               required=["code", "message"])}, required=["error"],
                 description="Every refusal of the trio's own routes (unknown path 404, wrong method 405 with Allow, 413, 414, 415, 431, ...)."),
    "JournalEntry": obj({"at": TIME, "method": S, "path": S, "status": I, "duration_ms": N,
                         "participant": S, "token": S, "study": S},
                         required=["at", "method", "path", "status", "duration_ms"]),
    "Journal": obj({"requests": arr(ref("JournalEntry"))}, required=["requests"]),
}


def wait_params():
    """`wait` and `min_count`, which every listing takes (PROTOCOL.md §8)."""
    return [query("wait", {"type": "string", "pattern": "^[0-9.]+(ms|s|m)?$"},
                  "wait up to this long (500ms, 5s, 1m; at most 60s) for `min_count` items; then answer with what there is"),
            query("min_count", {"type": "integer", "minimum": 1, "maximum": 100000}, "the items that end a wait (default 1)")]


LISTING_NOTE = "An unknown query parameter is refused (400 `unknown_parameter`)."


def journal_paths(prefix, tag):
    return {
        f"{prefix}/requests": {
            "get": op("The last requests, newest first (bodies are never kept)",
                      {**ok(ref("Journal")), **errors()},
                      params=[query("limit", {"type": "integer", "minimum": 1, "maximum": 10000}, "at most this many (default 100)"),
                              query("path", S, "only paths starting with this"),
                              query("status", {"type": "integer", "minimum": 100, "maximum": 599}, "only this status"),
                              query("participant", S, "only requests about this participant"),
                              query("token", S, "only requests naming this device token"),
                              query("study", S, "only requests about this study (mock server)"),
                              query("since", TIME_IN, "only requests at or after this time"), *wait_params()],
                      tags=[tag], description=LISTING_NOTE),
            "delete": op("Clears the journal", {**empty(), **errors()}, tags=[tag]),
        },
        f"{prefix}/openapi.json": {
            "get": op("This document", {**ok({"type": "object"}), **errors()}, tags=[tag]),
        },
    }


def metrics_path():
    return {"/metrics": {"get": op("Prometheus metrics", {**ok(S, content_type="text/plain; version=0.0.4"), **errors()},
                                   tags=["metrics"])}}


# Every operation's operationId (generated clients name their functions after it). A new route without one fails the
# generator.
OPERATION_IDS = {
    # mock-server: admin
    ("put", "/__admin/faults"): "set_faults",
    ("get", "/__admin/features/{app_id}"): "get_feature_settings",
    ("put", "/__admin/features/{app_id}/{feature_id}"): "set_feature",
    ("delete", "/__admin/features/{app_id}/{feature_id}"): "delete_feature",
    ("get", "/__admin/health"): "admin_health",
    ("get", "/__admin/info"): "server_info",
    ("get", "/__admin/openapi.json"): "admin_openapi_document",
    ("get", "/__admin/participants/{patient_id}"): "get_participant",
    ("post", "/__admin/participants/{patient_id}/interventions"): "set_participant_intervention",
    ("get", "/__admin/pushes/{push_uuid}"): "get_push",
    ("get", "/__admin/requests"): "list_server_requests",
    ("delete", "/__admin/requests"): "clear_server_requests",
    ("post", "/__admin/reset"): "reset_server",
    ("post", "/__admin/studies"): "create_study",
    ("get", "/__admin/studies/{study_id}"): "get_study",
    ("get", "/__admin/studies/{study_id}/clock"): "get_study_clock",
    ("post", "/__admin/studies/{study_id}/clock"): "move_study_clock",
    ("post", "/__admin/studies/{study_id}/interventions"): "add_study_intervention",
    ("get", "/__admin/studies/{study_id}/occurrences"): "list_occurrences",
    ("post", "/__admin/studies/{study_id}/participants"): "create_participants",
    ("get", "/__admin/studies/{study_id}/pushes"): "list_pushes",
    ("get", "/__admin/studies/{study_id}/stats"): "get_study_stats",
    ("get", "/__admin/studies/{study_id}/submissions"): "list_submissions",
    ("post", "/__admin/studies/{study_id}/surveys"): "create_survey",
    ("get", "/__admin/surveys/{survey_id}"): "get_survey",
    ("put", "/__admin/surveys/{survey_id}"): "replace_survey",
    ("delete", "/__admin/surveys/{survey_id}"): "delete_survey",
    ("get", "/__admin/telemetry"): "list_telemetry",
    ("get", "/__admin/telemetry/gaps"): "list_telemetry_gaps",
    # mock-server: mobile API (Beiwe's), telemetry and features
    ("post", "/confirm_notifications"): "confirm_notifications",
    ("post", "/confirm_notifications/ios"): "confirm_notifications_ios",
    ("post", "/download_survey"): "download_survey",
    ("post", "/download_survey/ios"): "download_survey_ios",
    ("post", "/download_surveys"): "download_surveys",
    ("post", "/download_surveys/ios"): "download_surveys_ios",
    ("get", "/features/{app_id}"): "get_features",
    ("post", "/get_latest_device_settings"): "get_latest_device_settings",
    ("post", "/get_latest_device_settings/ios"): "get_latest_device_settings_ios",
    ("post", "/mobile-heartbeat"): "mobile_heartbeat",
    ("post", "/mobile-heartbeat/ios"): "mobile_heartbeat_ios",
    ("post", "/register_user"): "register_user",
    ("post", "/register_user/ios"): "register_user_ios",
    ("post", "/set_fcm_token"): "set_fcm_token",
    ("post", "/set_fcm_token/ios"): "set_fcm_token_ios",
    ("post", "/submit/{app_id}/{ping}/{schema}/{document_id}"): "submit_ping",
    ("post", "/upload"): "upload",
    ("post", "/upload/ios"): "upload_ios",
    # push-relay
    ("post", "/3/device"): "apns_send_without_token",
    ("post", "/3/device/{token}"): "apns_send",
    ("put", "/__control/apns/keys/{kid}"): "set_apns_key",
    ("post", "/__control/clock"): "advance_relay_clock",
    ("get", "/__control/devices/{token}"): "get_device",
    ("put", "/__control/devices/{token}"): "set_device_reachability",
    ("put", "/__control/faults"): "set_relay_faults",
    ("get", "/__control/fcm/service-account.json"): "make_service_account",
    ("get", "/__control/health"): "relay_health",
    ("get", "/__control/openapi.json"): "control_openapi_document",
    ("get", "/__control/requests"): "list_relay_requests",
    ("delete", "/__control/requests"): "clear_relay_requests",
    ("post", "/__control/reset"): "reset_relay",
    ("get", "/__control/stats"): "relay_stats",
    ("get", "/__control/tls/ca.pem"): "get_tls_ca",
    ("get", "/__control/trace"): "list_trace",
    ("post", "/iid/v1:batchAdd"): "iid_batch_add",
    ("post", "/iid/v1:batchRemove"): "iid_batch_remove",
    ("post", "/token"): "oauth2_token",
    ("post", "/v1/devices"): "register_device",
    ("delete", "/v1/devices/{token}"): "unregister_device",
    ("post", "/v1/devices/{token}/ack"): "ack_messages",
    ("post", "/v1/devices/{token}/rotate"): "rotate_token",
    ("get", "/v1/devices/{token}/stream"): "device_stream",
    ("post", "/v1/projects/{project}/messages:send"): "fcm_send",
    ("post", "/v1/projects/{project}/registrations/{token}/topicSubscriptions"): "subscribe_topic",
    ("delete", "/v1/projects/{project}/registrations/{token}/topicSubscriptions/{topic}"): "unsubscribe_topic",
    # survey-cli devices serve
    ("post", "/__devices"): "create_device",
    ("get", "/__devices"): "list_devices",
    ("get", "/__devices/openapi.json"): "devices_openapi_document",
    ("get", "/__devices/health"): "devices_health",
    ("get", "/__devices/{device_id}"): "get_device_status",
    ("delete", "/__devices/{device_id}"): "delete_device",
    ("post", "/__devices/{device_id}/stop"): "stop_device",
    ("post", "/__devices/{device_id}/start"): "start_device",
    ("get", "/__devices/{device_id}/events"): "device_events",
    ("post", "/__devices/{device_id}/answers"): "answer_survey",
}


def name_operations(title, paths):
    """Sets each operation's operationId (`/metrics` is the server's name plus `_metrics`)."""
    missing = []
    for path, item in paths.items():
        for method, operation in item.items():
            if method not in ("get", "put", "post", "delete", "patch"):
                continue
            name = OPERATION_IDS.get((method, path))
            if path == "/metrics":
                name = title.replace("-", "_") + "_metrics"
            if name is None:
                missing.append(f"{method.upper()} {path}")
            else:
                operation["operationId"] = name
    if missing:
        sys.exit("no operationId for: " + ", ".join(missing) + " (add them to OPERATION_IDS)")


def document(title, description, paths, schemas, metrics=True):
    """A server's OpenAPI document: its paths plus /metrics, sorted, with its schemas."""
    paths = {**paths, **metrics_path()} if metrics else dict(paths)
    name_operations(title, paths)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": VERSION, "description": description},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": schemas},
    }


# MARK: mock-server

# Beiwe's device settings (Sources/MockServer/DeviceSettings.swift; Tests/APIReferenceTests checks the list).
DEVICE_SETTINGS = sorted("""
about_page_text accelerometer accelerometer_frequency accelerometer_off_duration_seconds accelerometer_on_duration_seconds
allow_upload_over_cellular_data ambient_audio ambient_audio_bitrate ambient_audio_off_duration_seconds
ambient_audio_on_duration_seconds ambient_audio_sampling_rate bluetooth bluetooth_global_offset_seconds
bluetooth_on_duration_seconds bluetooth_total_duration_seconds call_clinician_button_enabled call_clinician_button_text
call_research_assistant_button_enabled calls check_for_new_surveys_frequency_seconds consent_form_text consent_sections
create_new_data_files_frequency_seconds devicemotion devicemotion_off_duration_seconds devicemotion_on_duration_seconds gps
gps_off_duration_seconds gps_on_duration_seconds gyro gyro_frequency gyro_off_duration_seconds gyro_on_duration_seconds
heartbeat_message heartbeat_timer_minutes magnetometer magnetometer_off_duration_seconds magnetometer_on_duration_seconds
power_state proximity reachability resend_period_minutes seconds_before_auto_logout survey_submit_success_toast_text texts
upload_data_files_frequency_seconds use_anonymized_hashing use_gps_fuzzing voice_recording_max_time_length_seconds wifi
wifi_log_frequency_seconds
""".split())

HOUR = {"type": "integer", "minimum": 0, "maximum": 23}
MINUTE = {"type": "integer", "minimum": 0, "maximum": 59}
# Each variant is a named component: generated clients (openapi-python-client) drop inline object variants of oneOf.
SCHEDULE_SCHEMAS = {
    "RelativeDay": obj({"day": {"type": "integer", "minimum": 0, "maximum": 3650}}, ["day"], extra=False,
                       description="a day counted from the participant's registration"),
    "WeeklySchedule": obj({"type": {"const": "weekly"}, "day_of_week": {"type": "integer", "minimum": 0, "maximum": 6},
                           "hour": HOUR, "minute": MINUTE,
                           "from": {"oneOf": [{"type": "null"}, DATE_LIMITED, ref("RelativeDay")]},
                           "until": {"oneOf": [{"type": "null"}, DATE_LIMITED, ref("RelativeDay")]}},
                          ["type", "day_of_week", "hour", "minute"], extra=False),
    "AbsoluteSchedule": obj({"type": {"const": "absolute"}, "date": DATE_LIMITED, "hour": HOUR, "minute": MINUTE},
                            ["type", "date", "hour", "minute"], extra=False),
    "InterventionAnchor": obj({"intervention": S}, ["intervention"], extra=False),
    "RelativeSchedule": obj({"type": {"const": "relative"}, "days_after": {"type": "integer", "minimum": 0, "maximum": 3650},
                             "hour": HOUR, "minute": MINUTE,
                             "anchor": {"oneOf": [{"const": "registration"}, ref("InterventionAnchor")],
                                        "description": "default: registration"}},
                            ["type", "days_after", "hour", "minute"], extra=False),
}

SCHEDULE = {
    "oneOf": [ref("WeeklySchedule"), ref("AbsoluteSchedule"), ref("RelativeSchedule")],
    "description": "Local wall-clock times of the participant; day_of_week 0 = Sunday.",
}

MOCK_SCHEMAS = {
    **COMMON_SCHEMAS,
    **SCHEDULE_SCHEMAS,
    "Health": obj({"status": {"const": "ok"}}, ["status"]),
    "Info": obj({"service": S, "version": S, "pid": I, "url": S, "store": S, "kdf_iterations": I, "relay_url": NULLABLE_S,
                 "relay_urls": arr(S)},
                ["service", "version", "pid", "url", "store", "kdf_iterations"]),
    "CreateStudy": req({"name": {**NAME, "pattern": "\\S", "description": "not only white space"},
                        "timezone": {"type": "string", "description": "a tz database name (default America/New_York)"},
                        "scheduling": {"enum": ["server", "device"]},
                        "device_settings": obj({key: ANY for key in DEVICE_SETTINGS}, extra=False,
                                               description="Beiwe's device settings to override (others keep Beiwe's defaults)"),
                        "clock": obj({"frozen_at": TIME_LIMITED}, ["frozen_at"], description="other keys are ignored"),
                        "max_delay_minutes": {"type": "integer", "minimum": 1, "maximum": 43200},
                        "per_participant_keys": B,
                        "interventions": arr({"type": "string", "minLength": 1, "maxLength": 100}, maxItems=1000)},
                       ["name", "scheduling"], extra=False),
    "Clock": obj({"now": TIME, "mode": {"enum": ["real", "frozen"]}}, ["now", "mode"]),
    "Study": obj({"study_id": S, "name": S, "timezone": S, "scheduling": S, "max_delay_minutes": I,
                  "per_participant_keys": B, "device_settings": {"type": "object"}, "clock": ref("Clock"),
                  "interventions": arr(S), "created_at": TIME},
                 ["study_id", "name", "timezone", "scheduling", "max_delay_minutes", "per_participant_keys", "device_settings",
                  "clock", "interventions", "created_at"]),
    "StudyStats": obj({"participants": I, "registered": I, "occurrences_pending": I, "pushes_sent": I, "submissions": I},
                      ["participants", "registered", "occurrences_pending", "pushes_sent", "submissions"]),
    "CreateParticipants": {"oneOf": [
        obj({"count": {"type": "integer", "minimum": 1, "maximum": 10000}}, ["count"], extra=False),
        req({"patient_id": {"type": "string", "pattern": "^[a-z0-9]{1,32}$"}, "password": {"type": "string", "minLength": 1, "maxLength": 256},
             "count": {"type": "null"}}, extra=False)],
        "description": "One participant (`patient_id` and `password` made up when absent) or `count` of them."},
    "CreatedParticipants": obj({"participants": arr(obj({"patient_id": S, "password": S}, ["patient_id", "password"]))},
                               ["participants"]),
    "Participant": obj({"patient_id": S, "study_id": S, "registered_at": NULLABLE_S, "timezone": NULLABLE_S,
                        "timezone_fallback": B, "push_token": NULLABLE_S, "push_token_unregistered": B,
                        "device_id": NULLABLE_S, "os": NULLABLE_S,
                        "last_registered_at": {"type": ["string", "null"], "description": "the latest registration, with milliseconds"}},
                       ["patient_id", "study_id", "timezone_fallback", "push_token_unregistered"]),
    "Intervention": req({"name": NAME, "date": DATE_LIMITED}, ["name", "date"], extra=False),
    "InterventionName": req({"name": {"type": "string", "minLength": 1, "maxLength": 100}}, ["name"], extra=False),
    "Schedule": SCHEDULE,
    "Question": obj({"question_id": {"type": "string", "minLength": 1}, "question_text": S,
                     "question_type": {"enum": ["info_text_box", "slider", "radio_button", "checkbox", "free_response", "date",
                                                "time", "date_time"]},
                     "text_field_type": {"enum": ["NUMERIC", "SINGLE_LINE_TEXT", "MULTI_LINE_TEXT"]},
                     "answers": arr(obj({"text": S}, ["text"])), "min": S, "max": S, "display_if": ANY,
                     "required": {"description": "true: the participant must answer (Beiwe's flag; other values read as false)"}},
                    ["question_id", "question_type"],
                    description="Beiwe's question; radio_button and checkbox need `answers`; question ids unique in a survey."),
    "CreateSurvey": req({"name": NAME, "survey_type": {"enum": ["tracking_survey", "audio_survey"]},
                         "content": arr(ref("Question"), maxItems=1000), "settings": {"type": "object"},
                         "schedules": arr(ref("Schedule"), maxItems=1000)},
                        ["name", "survey_type", "content", "schedules"], extra=False),
    "SurveyCreated": obj({"survey_id": S}, ["survey_id"]),
    "SurveyEntry": obj({"_id": S, "name": S, "survey_type": S, "content": arr(ANY), "settings": ANY,
                        "timings": arr(arr(I))}, ["_id", "survey_type", "content"]),
    "Occurrence": obj({"uuid": S, "survey_id": S, "patient_id": S, "due_at": TIME, "local_time": S, "status": S},
                      ["uuid", "survey_id", "patient_id", "due_at", "local_time", "status"]),
    "PushLogEntry": obj({"uuid": S, "patient_id": S, "survey_ids": arr(S), "schedule_uuids": arr(S), "due_at": TIME,
                         "sent_at": NULLABLE_S, "status": S, "relay_status": {"type": ["integer", "null"]},
                         "relay_reason": NULLABLE_S, "nonce": NULLABLE_S, "confirmed_uuids": {"type": ["array", "null"], "items": S},
                         "relay_message_id": {"type": ["string", "null"], "description": "the relay's message id (its trace key)"},
                         "resend": {"type": "boolean", "description": "the push re-sent occurrences whose receipt was not confirmed "
                                    "(Beiwe's resend to iOS apps from 2024.27, every resend_period_minutes)"}},
                        ["uuid", "patient_id", "survey_ids", "due_at", "status"]),
    "Submission": obj({"survey_id": S, "patient_id": S, "file_name": S, "received_at": TIME,
                       "answers": arr(obj({"question_id": S, "question_type": S, "question_text": S, "answer": S}))},
                      ["survey_id", "patient_id", "received_at", "answers"]),
    "StoredPing": obj({"document_id": S, "app_id": S, "ping": S, "schema_version": S, "client_id": S, "received_at": TIME,
                       "body": ANY}, ["document_id", "app_id", "ping", "received_at", "body"]),
    "SeqGaps": obj({"client_id": S, "ping": S, "stored": I, "highest": I, "missing": arr(I), "missing_count": I},
                   ["client_id", "ping", "stored", "highest", "missing"]),
    "ClockRequest": req({"freeze_at": {**TIME_LIMITED, "description": "RFC 3339, years 1970-2999, not before the study clock (409 clock_move_backwards) and at most 400 days past it (400 clock_move_too_far)"},
                         "advance_seconds": {"type": "integer", "minimum": 0, "maximum": 34560000},
                         "real": {"type": "boolean", "description": "true: the study follows real time again (409 clock_move_backwards while its clock is ahead of real time)"}}, extra=False, minProperties=1, maxProperties=1,
                        description="Exactly one of `freeze_at`, `advance_seconds`, `real`."),
    "ClockResult": obj({"now": TIME, "mode": S, "fired": arr(ref("PushLogEntry"))}, ["now", "mode", "fired"]),
    "FeatureSetting": obj({"rollout": ANY, "experiment": {"oneOf": [{"type": "null"}, obj({"slug": {"type": "string", "minLength": 1}, "branches": arr(obj(
        {"slug": {"type": "string", "minLength": 1}, "ratio": {"type": ["number", "null"], "minimum": 0, "description": "weight (default 1)"}, "value": ANY}, ["slug"]),
        minItems=1)}, ["slug", "branches"])]}}, extra=False, description="Branch slugs are unique; ratios are weights."),
    "Features": obj({"features": {"type": "object"}, "enrollments": arr(obj({"slug": S, "branch": S, "feature_id": S},
                                                                          ["slug", "branch", "feature_id"]))},
                    ["features", "enrollments"]),
    "FaultRule": req({"route": {"type": "string", "pattern": "^/(?!__admin)", "description": "a path outside /__admin, e.g. /upload"},
                      "status": {"type": "integer", "minimum": 400, "maximum": 599},
                      "delay_ms": obj({"min": {"type": "integer", "minimum": 0, "maximum": 60000},
                                       "max": {"type": "integer", "minimum": 0, "maximum": 60000}}, ["min", "max"],
                                      description="min <= max"),
                      "probability": {"type": "number", "minimum": 0, "maximum": 1}, "seed": {"type": "integer", "minimum": 0}},
                     ["route", "probability"], extra=False, description="Needs a status, a delay_ms, or both."),
    "Ping": obj({"ping_info": obj({"seq": {"type": "integer", "minimum": 0, "maximum": 2147483647}, "start_time": S,
                                   "end_time": S, "reason": {"type": ["string", "null"]}}, ["seq", "start_time", "end_time"]),
                 "client_info": obj({"client_id": {"type": ["string", "null"], "maxLength": 200,
                                                   "description": "absent from custom pings that leave it out; such pings are not in the gap report"},
                                     "app_build": S, "app_display_version": S, "os": S, "os_version": S, "locale": NULLABLE_S,
                                     "telemetry_sdk_build": S,
                                     "architecture": {"type": "string", "minLength": 1, "maxLength": 100},
                                     "first_run_date": {"type": "string", "minLength": 1, "maxLength": 100,
                                                        "description": "as Glean writes it: 2026-11-25+00:00"}},
                                    ["app_build", "app_display_version", "architecture", "first_run_date", "os", "os_version",
                                     "telemetry_sdk_build"]),
                 "events": nullable(arr(obj({"timestamp": INT64, "category": S, "name": S, "extra": {"type": ["object", "null"],
                                                                                                   "additionalProperties": S}},
                                            ["timestamp", "category", "name"]), maxItems=10000)),
                 "metrics": {"type": ["object", "null"]}}, ["ping_info", "client_info"],
                description="A Glean-shaped ping (1 MiB at most after decompression); what Glean's SDKs send (PROTOCOL.md §8)."),
    "Registration": obj({"client_public_key": S, "device_settings": {"type": "object"}, "ios_plist": {"type": "null"},
                         "android_firebase_json": {"type": "null"}, "study_name": S, "study_id": S,
                         "scheduling": {"enum": ["server", "device"]}, "timezone": S},
                        ["client_public_key", "device_settings", "study_name", "study_id"]),
}

CREDENTIALS = {
    "patient_id": FORM_S,
    "password": {**FORM_S, "description": "base64url(sha256(plaintext)) with = padding"},
    "device_id": FORM_S,
    "timezone": FORM_S, "version_code": FORM_S, "version_name": FORM_S, "os_version": FORM_S,
    "device_status_report": {**FORM_S, "maxLength": 65536}, "notification_uuids": {**FORM_S, "description": "JSON list of schedule uuids (receipts)"},
}


def mobile_form(extra_props=None, extra_required=()):
    props = dict(CREDENTIALS)
    props.update(extra_props or {})
    schema = obj(props, ["patient_id", "password", "device_id", *extra_required],
                 additionalProperties=FORM_S, propertyNames={"pattern": NO_NUL})
    return {"required": True, "content": {
        "application/x-www-form-urlencoded": {"schema": schema},
        "multipart/form-data": {"schema": schema},
    }}


MOBILE = [
    ("/register_user", "Registers the device", mobile_form({
        **{key: FORM_S for key in ["phone_number", "device_os", "product", "brand", "hardware_id", "manufacturer", "model",
                                   "beiwe_version"]},
        "new_password": {**FORM_S, "description": "the participant's new password in plaintext, as Beiwe's apps send it (the "
                                                  "server stores its hash; `password` is already hashed); required with `phone_number`"},
        "fcm_token": {**FORM_S, "description": "the device's push token. A study that schedules on the server (`scheduling: server`) "
                                               "refuses a registration without one (400 `push_token_required`), since it could never push a "
                                               "survey; `--profile beiwe` ignores it, as Beiwe does (only `/set_fcm_token` stores a token)"},
    }), ok(ref("Registration"))),
    ("/set_fcm_token", "Replaces the push token", mobile_form({"fcm_token": FORM_S}, ["fcm_token"]), empty()),
    ("/download_surveys", "The whole survey set, with timings", mobile_form(), ok(arr(ref("SurveyEntry")))),
    ("/download_survey", "One survey's spec (after a push)", mobile_form({"survey_id": FORM_S, "schedule_uuid": FORM_S}, ["survey_id"]),
     ok(ref("SurveyEntry"))),
    ("/upload", "A Beiwe-encrypted data file", mobile_form({"file_name": FORM_S, "file": FORM_S}, ["file_name", "file"]),
     ok({"type": "string", "const": "upload successful."}, content_type="text/plain; charset=utf-8")),
    ("/mobile-heartbeat", "Records a heartbeat", mobile_form({"message": {**FORM_S, "maxLength": 65536}}), ok({"type": "object"})),
    ("/get_latest_device_settings", "The study's device settings", mobile_form(), ok({"type": "object"})),
    ("/confirm_notifications", "Receipts for delivered notifications", mobile_form({}, ["notification_uuids"]), empty()),
]


def mock_server_document():
    paths = {}
    for path, summary, body, success in MOBILE:
        for variant, note in ((path, ""), (path + "/ios", " (iOS: authentication failures answer 401)")):
            paths[variant] = {"post": op(summary + note, {**success, **errors()}, body=body, tags=["mobile"])}
    study = path_param("study_id")
    admin = "/__admin"
    paths.update({
        f"{admin}/health": {"get": op("Health", {**ok(ref("Health")), **errors()}, tags=["admin"])},
        f"{admin}/info": {"get": op("Version, pid, bound URL, store, kdf iterations, relay URL", {**ok(ref("Info")), **errors()}, tags=["admin"])},
        f"{admin}/reset": {"post": op("Wipes everything", {**empty(), **errors()}, tags=["admin"])},
        f"{admin}/faults": {"put": op("Replaces the fault rules (`[]` clears)", {**empty(), **errors()},
                                      body=json_body({"oneOf": [arr(ref("FaultRule"), maxItems=100), ref("FaultRule")]}), tags=["admin"])},
        f"{admin}/studies": {"post": op("Creates a study", {**ok(ref("Study"), "201", "Created"), **errors()},
                                        body=json_body(ref("CreateStudy")), tags=["admin"])},
        f"{admin}/studies/{{study_id}}": {"get": op("A study", {**ok(ref("Study")), **errors()}, params=[study], tags=["admin"])},
        f"{admin}/studies/{{study_id}}/stats": {"get": op("Counts", {**ok(ref("StudyStats")), **errors()}, params=[study], tags=["admin"])},
        f"{admin}/studies/{{study_id}}/interventions": {"post": op("Declares an intervention name",
                                                                   {**ok(ref("Study"), "201", "Created"), **errors()},
                                                                   body=json_body(ref("InterventionName")), params=[study], tags=["admin"])},
        f"{admin}/studies/{{study_id}}/participants": {"post": op("Creates participants (temporary passwords in plaintext)",
                                                                  {**ok(ref("CreatedParticipants"), "201", "Created"), **errors()},
                                                                  body=json_body(ref("CreateParticipants")), params=[study], tags=["admin"])},
        f"{admin}/participants/{{patient_id}}": {"get": op("A participant", {**ok(ref("Participant")), **errors()},
                                                           params=[path_param("patient_id")], tags=["admin"])},
        f"{admin}/participants/{{patient_id}}/interventions": {"post": op("Sets an intervention date (anchor of relative schedules)",
                                                                          {**empty(), **errors()}, body=json_body(ref("Intervention")),
                                                                          params=[path_param("patient_id")], tags=["admin"])},
        f"{admin}/studies/{{study_id}}/surveys": {"post": op("Creates a survey", {**ok(ref("SurveyCreated"), "201", "Created"), **errors()},
                                                             body=json_body(ref("CreateSurvey")), params=[study], tags=["admin"])},
        f"{admin}/surveys/{{survey_id}}": {
            "get": op("A survey (with timings)", {**ok(ref("SurveyEntry")), **errors()}, params=[path_param("survey_id")], tags=["admin"]),
            "put": op("Replaces a survey (never re-sends an occurrence already sent)", {**ok(ref("SurveyCreated")), **errors()},
                      body=json_body(ref("CreateSurvey")), params=[path_param("survey_id")], tags=["admin"]),
            "delete": op("Deletes a survey (pending occurrences are dropped)", {**empty(), **errors()},
                         params=[path_param("survey_id")], tags=["admin"]),
        },
        f"{admin}/studies/{{study_id}}/occurrences": {"get": op("Pending occurrences (`status=all`: every one)",
                                                                {**ok(arr(ref("Occurrence"))), **errors()},
                                                                params=[study, query("patient_id"), query("status", {"enum": ["all", "pending"]}),
                                                                        *wait_params()],
                                                                tags=["admin"], description=LISTING_NOTE)},
        f"{admin}/studies/{{study_id}}/pushes": {"get": op("The push send log", {**ok(arr(ref("PushLogEntry"))), **errors()},
                                                           params=[study, query("patient_id"), *wait_params()], tags=["admin"],
                                                           description=LISTING_NOTE)},
        f"{admin}/pushes/{{push_uuid}}": {"get": op("One push of the send log, by its uuid", {**ok(ref("PushLogEntry")), **errors()},
                                                    params=[path_param("push_uuid")], tags=["admin"])},
        f"{admin}/studies/{{study_id}}/submissions": {"get": op("Decrypted survey answers", {**ok(arr(ref("Submission"))), **errors()},
                                                                params=[study, query("patient_id"), *wait_params()], tags=["admin"],
                                                                description=LISTING_NOTE)},
        f"{admin}/telemetry": {"get": op("Stored pings, oldest first", {**ok(arr(ref("StoredPing"))), **errors()},
                                         params=[query("client_id"), query("ping"), query("since", TIME_IN), *wait_params()], tags=["admin"],
                                         description=LISTING_NOTE)},
        f"{admin}/telemetry/gaps": {"get": op("Missing ping sequence numbers per client and ping", {**ok(arr(ref("SeqGaps"))), **errors()},
                                              params=[query("client_id")], tags=["admin"])},
        f"{admin}/studies/{{study_id}}/clock": {
            "get": op("The study clock", {**ok(ref("Clock")), **errors()}, params=[study], tags=["admin"]),
            "post": op("Freezes, advances or releases the study clock; returns once every push due by then went to the relay",
                       {**ok(ref("ClockResult")), **errors()}, body=json_body(ref("ClockRequest")), params=[study], tags=["admin"]),
        },
        f"{admin}/features/{{app_id}}": {"get": op("An app's feature settings", {**ok({"type": "object"}), **errors()},
                                                   params=[path_param("app_id")], tags=["features"])},
        f"{admin}/features/{{app_id}}/{{feature_id}}": {
            "put": op("Sets a feature's rollout value and experiment", {**empty(), **errors()}, body=json_body(ref("FeatureSetting")),
                      params=[path_param("app_id"), path_param("feature_id")], tags=["features"]),
            "delete": op("Removes a feature", {**empty(), **errors()}, params=[path_param("app_id"), path_param("feature_id")],
                         tags=["features"]),
        },
        "/features/{app_id}": {"get": op("Feature values for a client (rollout merged with its experiment branch)",
                                         {**ok(ref("Features")), **errors()},
                                         params=[path_param("app_id"), {"name": "client_id", "in": "query", "required": True,
                                                                        "schema": {"type": "string", "minLength": 1}}],
                                         tags=["features"])},
        "/submit/{app_id}/{ping}/{schema}/{document_id}": {"post": op(
            "Stores a telemetry ping (a document id seen before: 200, stored once)", {**empty("200", "Stored"), **errors()},
            body=json_body(ref("Ping")),
            params=[path_param("app_id"), path_param("ping"), path_param("schema"), path_param("document_id")], tags=["telemetry"])},
    })
    paths.update(journal_paths(admin, "admin"))
    return document("mock-server", "The Beiwe-compatible mock study server: mobile API (Beiwe's), telemetry ingestion, "
                    "features, and the admin API under /__admin (loopback, or a bearer token with --admin-token).",
                    paths, MOCK_SCHEMAS)


# MARK: push-relay

RELAY_SCHEMAS = {
    "TraceEntry": obj({"message_id": S, "token": S,
                       "event": {"enum": ["accepted", "stored", "delivered", "acked", "expired", "dropped"]},
                       "at": {"type": "integer", "description": "milliseconds since 1970 on the relay's clock"},
                       "detail": NULLABLE_S},
                      ["message_id", "token", "event", "at"], description="One milestone of one message"),
    **COMMON_SCHEMAS,
    "Health": obj({"status": {"const": "ok"}, "version": S, "node_id": {"type": "string", "pattern": "^(0|[1-9][0-9]{0,3})$",
                                                                              "description": "push-relay --node-id (0-4095), as a string"}},
                  ["status", "version", "node_id"]),
    "DeviceRequest": req({"platform": {"enum": ["ios", "android"]}, "app_id": {"type": "string", "minLength": 1}},
                         ["platform", "app_id"]),
    "Token": obj({"token": S}, ["token"]),
    "Ack": obj({"ids": arr(S)}, ["ids"]),
    "Message": obj({"id": S, "payload": ANY, "priority": {"type": ["integer", "null"]}, "collapse_id": NULLABLE_S,
                    "push_type": NULLABLE_S, "sent_at": I}, ["id", "payload", "sent_at"]),
    "DeviceView": obj({"token": S, "platform": S, "app_id": S, "connected": B, "reachable": B, "pending": arr(ref("Message")),
                       "delivered": I, "acked": I, "streams_opened": I},
                      ["token", "platform", "connected", "reachable", "pending", "delivered", "acked"]),
    "Reachability": req({"reachable": B}, ["reachable"]),
    "Faults": req({"seed": {"type": "integer", "minimum": 0}, "token": S,
                   "drop_rate": {"type": "number", "minimum": 0, "maximum": 1},
                   "duplicate_rate": {"type": "number", "minimum": 0, "maximum": 1},
                   "delay_ms": obj({"min": {"type": "integer", "minimum": 0, "maximum": 60000},
                                    "max": {"type": "integer", "minimum": 0, "maximum": 60000}}, ["min", "max"], description="min <= max"),
                   "reorder_window": {"type": "integer", "minimum": 0, "maximum": 1000},
                   "outage": req({"status": {"type": "integer", "minimum": 400, "maximum": 599},
                                  "seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400}}, ["seconds"]),
                   "blackhole": B, "zombie": B, "close_all": B,
                   "fail_next": req({"count": {"type": "integer", "minimum": 1, "maximum": 100000},
                                     "status": {"type": "integer", "minimum": 400, "maximum": 599}}, ["count", "status"],
                                    description="the next `count` provider requests answer `status`, then the fault clears itself")}, extra=False,
                  description="`token` names a device the relay knows (404 otherwise)."),
    "ClockAdvance": req({"advance_seconds": {"type": "integer", "minimum": 0, "maximum": 34560000}}, ["advance_seconds"]),
    "ClockNow": obj({"now": TIME}, ["now"]),
    "APNsError": obj({"reason": S, "timestamp": I}, ["reason"]),
    "FCMSend": obj({"message": obj({"token": {"type": "string", "minLength": 1, "description": "exactly one of token, topic, condition, fid"},
                                    "topic": {"type": "string", "description": "`news` or `/topics/news`: every device subscribed"},
                                    "condition": {"type": "string", "description": "`'a' in topics && !('b' in topics)`: at most 5 topics"},
                                    "fid": {"type": "string", "minLength": 1, "description": "a Firebase installation ID (the relay takes a device token)"},
                                    "data": nullable({"type": "object", "additionalProperties": S,
                                                      "description": "with the notification, at most 4096 bytes as JSON"}),
                                    "notification": nullable(req({"title": S, "body": S, "image": S})),
                                    "android": nullable(req({"ttl": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?s$",
                                                                     "description": "seconds, at most 2419200 (28 days)"},
                                                             "collapse_key": S,
                                                             "priority": {"type": "string", "pattern": "^([Hh][Ii][Gg][Hh]|[Nn][Oo][Rr][Mm][Aa][Ll])$",
                                                                          "description": "high or normal (any case)"},
                                                             "data": nullable({"type": "object", "additionalProperties": S,
                                                                               "description": "overrides `data` for Android devices"}),
                                                             "notification": nullable({"type": "object"})})),
                                    "apns": nullable(req({"headers": nullable({"type": "object", "additionalProperties": S}),
                                                          "payload": nullable({"type": "object", "description": "what an iOS device receives"})})),
                                    "webpush": nullable({"type": "object"}),
                                    "fcm_options": nullable({"type": "object"})}),
                    "validate_only": nullable(B)},
                   ["message"]),
    "APNsKey": req({"public_key": {"type": "string", "description": "PEM: -----BEGIN PUBLIC KEY----- (or the .p8 private key)"}}, ["public_key"]),
    "OAuthToken": obj({"access_token": S, "expires_in": I, "token_type": S}, ["access_token", "expires_in", "token_type"]),
    "OAuthError": obj({"error": S, "error_description": S}, ["error"]),
    "OAuthGrant": obj({"grant_type": {"type": "string", "description": "urn:ietf:params:oauth:grant-type:jwt-bearer"},
                       "assertion": {"type": "string", "description": "an RS256 JWT signed with a service account's key"}}),
    "ServiceAccount": obj({"type": S, "project_id": S, "private_key_id": S, "private_key": S, "client_email": S, "client_id": S,
                           "auth_uri": S, "token_uri": S, "auth_provider_x509_cert_url": S, "client_x509_cert_url": S, "universe_domain": S},
                          ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"]),
    "TopicBatch": obj({"to": {"type": "string", "pattern": "^(/topics/)?[a-zA-Z0-9._~%-]{1,900}$"},
                       "registration_tokens": arr(S, minItems=1, maxItems=1000)}, ["to", "registration_tokens"]),
    "TopicBatchResults": obj({"results": arr({"type": "object"})}, ["results"]),
    "IIDError": obj({"error": S}, ["error"]),
    "FCMName": obj({"name": S}, ["name"]),
    "FCMError": obj({"error": obj({"code": I, "message": S, "status": S, "details": arr({"type": "object"})},
                                  ["code", "status"])}, ["error"]),
}


def relay_document():
    token = path_param("token")
    apns_headers = [
        {"name": "apns-id", "in": "header", "required": False, "schema": {"type": "string", "format": "uuid"}},
        {"name": "apns-expiration", "in": "header", "required": False, "schema": {"type": "string", "pattern": "^[0-9]{1,12}$"}},
        {"name": "apns-priority", "in": "header", "required": False, "schema": {"enum": ["10", "5", "1"]}},
        {"name": "apns-collapse-id", "in": "header", "required": False, "schema": {"type": "string", "maxLength": 64}},
        {"name": "apns-push-type", "in": "header", "required": False, "schema": {"enum": ["alert", "background"]}},
        {"name": "apns-topic", "in": "header", "required": False, "schema": S,
         "description": "the app's bundle id; required with a provider token"},
        {"name": "authorization", "in": "header", "required": False, "schema": S,
         "description": "`bearer <ES256 JWT>` signed by a key given to PUT /__control/apns/keys/{kid}; required with --provider-auth strict"},
    ]
    apns_errors = {"default": {"description": "APNs refusal (`reason`)", "content": {"application/json": {"schema": ref("APNsError")}}}}
    fcm_errors = {"default": {"description": "FCM v1 error", "content": {"application/json": {"schema": {"oneOf": [ref("FCMError"), ref("Error")]}}}}}
    iid_errors = {"default": {"description": "Instance ID error", "content": {"application/json": {"schema": {"oneOf": [ref("IIDError"), ref("FCMError"), ref("Error")]}}}}}
    paths = {
        "/3/device/{token}": {"post": op("APNs-style send", {
            "200": {"description": "Accepted", "headers": {"apns-id": {"schema": S, "required": True}}}, **apns_errors},
            body=json_body({"type": "object"}), params=[token, *apns_headers], tags=["provider"])},
        "/3/device": {"post": op("APNs-style send without a token (always 400 MissingDeviceToken)", apns_errors, tags=["provider"])},
        "/v1/projects/{project}/messages:send": {"post": op("FCM v1-style send", {
            **ok(ref("FCMName")),
            "default": {"description": "FCM v1 error", "content": {"application/json": {"schema": {"oneOf": [ref("FCMError"), ref("Error")]}}}}},
            body=json_body(ref("FCMSend")), params=[path_param("project")], tags=["provider"])},
        "/token": {"post": op("OAuth2 token endpoint for a service account's JWT-bearer grant (its `token_uri`)", {
            **ok(ref("OAuthToken")),
            "400": {"description": "Refused grant", "content": {"application/json": {"schema": ref("OAuthError")}}}, **errors()},
            body={"required": True, "content": {"application/x-www-form-urlencoded": {"schema": ref("OAuthGrant")}}}, tags=["provider"])},
        "/v1/projects/{project}/registrations/{token}/topicSubscriptions": {"post": op("Subscribes a token to a topic (FCM v1)", {
            **ok({"type": "object"}), **fcm_errors},
            params=[path_param("project"), token, query("topic_name", S, "the topic")], tags=["provider"])},
        "/v1/projects/{project}/registrations/{token}/topicSubscriptions/{topic}": {"delete": op("Unsubscribes a token from a topic (FCM v1)", {
            **ok({"type": "object"}), **fcm_errors},
            params=[path_param("project"), token, path_param("topic")], tags=["provider"])},
        "/iid/v1:batchAdd": {"post": op("Subscribes tokens to a topic (Instance ID batch)", {
            **ok(ref("TopicBatchResults")), **iid_errors}, body=json_body(ref("TopicBatch")), tags=["provider"])},
        "/iid/v1:batchRemove": {"post": op("Unsubscribes tokens from a topic (Instance ID batch)", {
            **ok(ref("TopicBatchResults")), **iid_errors}, body=json_body(ref("TopicBatch")), tags=["provider"])},
        "/__control/tls/ca.pem": {"get": op("The CA of the TLS port's certificate (PEM), for clients to trust (404 with --tls-cert or --tls-port none)", {
            **ok(S, content_type="application/x-pem-file"), **errors()}, tags=["control"])},
        "/__control/apns/keys/{kid}": {"put": op("Registers an APNs signing key (PEM public key, or the .p8 private key) for provider tokens",
            {**empty(), **errors()}, body=json_body(ref("APNsKey")), params=[path_param("kid")], tags=["control"])},
        "/__control/fcm/service-account.json": {"get": op("A service account JSON (fresh key) whose token_uri is this relay's /token", {
            **ok(ref("ServiceAccount")), **errors()},
            params=[query("project_id", {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,100}$"}, "the project (default survey-trio)"),
                    query("token_uri", {"enum": ["google"]}, "google: token_uri is https://oauth2.googleapis.com/token (for a backend "
                          "that reaches the relay through its proxy)")],
            tags=["control"])},
        "/v1/devices": {"post": op("Issues a device token", {**ok(ref("Token"), "201", "Created"), **errors()},
                                   body=json_body(ref("DeviceRequest")), tags=["device"])},
        "/v1/devices/{token}/stream": {"get": op("The device's push stream (text/event-stream; unacked messages are sent again on connect)", {
            "200": {"description": "Events: `push`, `deleted_messages`; `: keepalive` comments",
                    "content": {"text/event-stream": {"schema": S}}}, **errors()},
            params=[token, {"name": "Last-Event-ID", "in": "header", "required": False, "schema": S}], tags=["device"])},
        "/v1/devices/{token}/ack": {"post": op("Acknowledges messages (never sent again)", {**empty(), **errors()},
                                               body=json_body(ref("Ack")), params=[token], tags=["device"])},
        "/v1/devices/{token}/rotate": {"post": op("Rotates the token (the old one answers 410 from then on)",
                                                  {**ok(ref("Token")), **errors()}, params=[token], tags=["device"])},
        "/v1/devices/{token}": {"delete": op("Uninstall: later sends answer 410", {**empty(), **errors()}, params=[token], tags=["device"])},
        "/__control/health": {"get": op("Health, version and node id (push-relay --node-id)", {**ok(ref("Health")), **errors()}, tags=["control"])},
        "/__control/stats": {"get": op("Counters", {**ok({"type": "object"}), **errors()}, tags=["control"])},
        "/__control/devices/{token}": {
            "get": op("A device's state", {**ok(ref("DeviceView")), **errors()}, params=[token], tags=["control"]),
            "put": op("Makes a device unreachable (disconnected, cannot reconnect) or reachable", {**ok(ref("DeviceView")), **errors()},
                      body=json_body(ref("Reachability")), params=[token], tags=["control"]),
        },
        "/__control/faults": {"put": op("Sets delivery faults", {**empty(), **errors()}, body=json_body(ref("Faults")), tags=["control"])},
        "/__control/trace": {"get": op("Per message: accepted, stored, delivered, acked, expired, dropped, with times",
                                       {**ok(arr(ref("TraceEntry"))), **errors()},
                                       params=[query("token"), query("event", S, "only this kind of entry (`acked`, `delivered`, ...)"),
                                               *wait_params()],
                                       tags=["control"], description=LISTING_NOTE)},
        "/__control/clock": {"post": op("Advances the relay clock (TTL expiry)", {**ok(ref("ClockNow")), **errors()},
                                        body=json_body(ref("ClockAdvance")), tags=["control"])},
        "/__control/reset": {"post": op("Forgets every device and message", {**empty(), **errors()}, tags=["control"])},
    }
    paths.update(journal_paths("/__control", "control"))
    return document("push-relay", "The simulated push relay: APNs- and FCM-style provider API, the device link the SDK streams "
                    "pushes from, and the control API under /__control.", paths, RELAY_SCHEMAS)


# MARK: survey-cli devices serve

def devices_document():
    status = json.loads((ROOT / "docs/schemas/device-status.schema.json").read_text())
    event = json.loads((ROOT / "docs/schemas/device-event.schema.json").read_text())
    for schema in (status, event):
        for key in ("$schema", "$id", "title"):
            schema.pop(key, None)
    # The event schema's own definitions, inlined (a `#/$defs/...` reference would resolve against this document).
    defs = event.pop("$defs", {})
    event["oneOf"] = [defs[item["$ref"].split("/")[-1]] if "$ref" in item else item for item in event["oneOf"]]
    schemas = {
        "Error": COMMON_SCHEMAS["Error"],
        "Health": MOCK_SCHEMAS["Health"],
        "DeviceStatus": status,
        "DeviceEvent": event,
        "CreateDevice": obj({"patient_id": {"type": "string", "minLength": 1, "maxLength": 64},
                             "password": {"type": "string", "minLength": 1, "maxLength": 256},
                             "timezone": {"type": "string", "description": "a tz database name"},
                             "platform": {"enum": ["android", "ios"]},
                             "os_version": {"type": "string", "minLength": 1, "maxLength": 16},
                             "telemetry_url": {"type": "string", "pattern": "^https?://", "description": "where pings go (default: kept queued)"},
                             "features_url": {"type": "string", "pattern": "^https?://", "description": "where feature values come from"},
                             "auto_answer": {"type": "boolean", "description": "answer every survey as soon as it is available"},
                             "answer_value": {"type": "string", "maxLength": 1000, "description": "the answer auto_answer gives every question (default 1)"}},
                            ["patient_id", "password", "timezone"], extra=False),
        "DeviceEvents": obj({"events": arr(ref("DeviceEvent")),
                             "next": {"type": "integer", "minimum": 0, "description": "the `after` to ask with next"}}, ["events", "next"]),
        "Answers": obj({"survey_id": {"type": "string", "minLength": 1},
                        "answers": {"type": "object", "additionalProperties": S, "description": "answer text by question id"}},
                       ["survey_id", "answers"], extra=False),
        "Answered": obj({"survey_id": S, "status": {"const": "uploaded"}}, ["survey_id", "status"]),
    }
    device = path_param("device_id")
    tag = ["devices"]
    paths = {
        "/__devices": {
            "post": op("Registers a device and starts it listening (201 once registered)", {**ok(ref("DeviceStatus"), status="201",
                       description="Created"), **errors()}, body=json_body(ref("CreateDevice")), tags=tag,
                       description="A refused registration answers the SDK's code: 403 invalid_credentials, 502 registration_failed or transport, ..."),
            "get": op("Every device, oldest first", {**ok(arr(ref("DeviceStatus"))), **errors()}, tags=tag),
        },
        "/__devices/openapi.json": {"get": op("This document", {**ok({"type": "object"}), **errors()}, tags=tag)},
        "/__devices/health": {"get": op("Health (what `survey-cli healthcheck` asks)", {**ok(ref("Health")), **errors()}, tags=tag)},
        "/__devices/{device_id}": {
            "get": op("What the device holds", {**ok(ref("DeviceStatus")), **errors()}, params=[device], tags=tag),
            "delete": op("Closes the device and deletes its directory", {**empty(), **errors()}, params=[device], tags=tag),
        },
        "/__devices/{device_id}/stop": {"post": op("Stops the device (its directory kept)", {**ok(ref("DeviceStatus")), **errors()},
                                                   params=[device], tags=tag)},
        "/__devices/{device_id}/start": {"post": op("Starts a stopped device again", {**ok(ref("DeviceStatus")), **errors()},
                                                    params=[device], tags=tag)},
        "/__devices/{device_id}/events": {"get": op(
            "The device's events after a seq, waiting for one (or for one named `until`)", {**ok(ref("DeviceEvents")), **errors()},
            params=[device, query("after", {"type": "integer", "minimum": 0, "maximum": 9007199254740992},
                          "events after this seq (default 0: from the first kept)"),
                    query("until", {"enum": ["registered", "push_received", "duplicate_ignored", "stream_reconnecting", "survey_available",
                                             "survey_withdrawn", "submitted", "telemetry_sent", "error"]},
                          "answer once this event came (the events up to it), or when the wait is over"),
                    *wait_params()],
            tags=tag, description=LISTING_NOTE + " `min_count` is not used here.")},
        "/__devices/{device_id}/answers": {"post": op("Answers a stored survey; answers once the server took the upload",
                                                      {**ok(ref("Answered")), **errors()}, body=json_body(ref("Answers")),
                                                      params=[device], tags=tag)},
    }
    return document("survey-devices", "Many simulated participant devices in one process (`survey-cli devices serve`): create, "
                    "read and drive them over HTTP.", paths, schemas, metrics=False)


def main():
    check = "--check" in sys.argv
    outputs = {"mock-server.json": mock_server_document(), "push-relay.json": relay_document(),
               "survey-devices.json": devices_document()}
    stale = []
    for name, document in outputs.items():
        text = json.dumps(document, indent=2, sort_keys=False) + "\n"
        target = ROOT / "docs/openapi" / name
        if check:
            if not target.exists() or target.read_text() != text:
                stale.append(name)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    if stale:
        print("out of date (run python3 scripts/openapi/generate.py): " + ", ".join(stale), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
