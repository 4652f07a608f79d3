import SurveyWire

/// Beiwe's `device_settings` keys and defaults (reference/beiwe.md §2.2).
enum DeviceSettings {
    static let defaults: [String: JSONValue] = [
        "accelerometer": true, "gps": true, "calls": true, "texts": true, "wifi": true, "bluetooth": false, "power_state": true,
        "use_anonymized_hashing": true, "use_gps_fuzzing": false, "call_clinician_button_enabled": true,
        "call_research_assistant_button_enabled": true, "ambient_audio": false, "proximity": false, "gyro": false,
        "magnetometer": false, "devicemotion": false, "reachability": true, "allow_upload_over_cellular_data": false,
        "accelerometer_off_duration_seconds": 10, "accelerometer_on_duration_seconds": 10, "accelerometer_frequency": 10,
        "ambient_audio_off_duration_seconds": 600, "ambient_audio_on_duration_seconds": 600, "ambient_audio_bitrate": 24000,
        "ambient_audio_sampling_rate": 44100, "bluetooth_on_duration_seconds": 60, "bluetooth_total_duration_seconds": 300,
        "bluetooth_global_offset_seconds": 0, "check_for_new_surveys_frequency_seconds": 3600,
        "create_new_data_files_frequency_seconds": 900, "gps_off_duration_seconds": 600, "gps_on_duration_seconds": 60,
        "seconds_before_auto_logout": 600, "upload_data_files_frequency_seconds": 3600,
        "voice_recording_max_time_length_seconds": 240, "wifi_log_frequency_seconds": 300,
        "gyro_off_duration_seconds": 600, "gyro_on_duration_seconds": 60, "gyro_frequency": 10,
        "magnetometer_off_duration_seconds": 600, "magnetometer_on_duration_seconds": 60,
        "devicemotion_off_duration_seconds": 600, "devicemotion_on_duration_seconds": 60,
        "heartbeat_timer_minutes": 60, "resend_period_minutes": 180,
        "about_page_text": "", "call_clinician_button_text": "Call My Clinician", "consent_form_text": "",
        "survey_submit_success_toast_text": "",
        "heartbeat_message": "Beiwe may not be running correctly, please open the Beiwe app.",
        "consent_sections": .object(Dictionary(uniqueKeysWithValues: [
            "welcome", "data_gathering", "privacy", "data_use", "time_commitment", "study_survey", "study_tasks", "withdrawing",
        ].map { ($0, JSONValue.object(["text": "", "more": ""])) })),
    ]

    /// Defaults overlaid with a study's own values; unknown keys are rejected by the caller.
    static func merged(_ overrides: [String: JSONValue]?, id: Int) -> [String: JSONValue] {
        var out = defaults
        for (key, value) in overrides ?? [:] { out[key] = value }
        out["id"] = .number(Double(id))
        return out
    }
}
