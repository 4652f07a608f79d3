import SurveyWire

/// What Firefox for iOS ships as the `messaging` feature's defaults (reference §1.3 and §2.1): styles, actions and
/// triggers. An app uses it as the lowest layer; recipes from the server are merged over it.
public enum FirefoxMessagingDefaults {
    public static let styles: [String: (priority: Int, maxDisplayCount: Int)] = [
        "FALLBACK": (40, 20), "DEFAULT": (50, 5), "MICROSURVEY": (50, 1), "NOTIFICATION": (50, 1),
        "PERSISTENT": (50, 20), "SURVEY": (55, 10), "WARNING": (60, 10), "URGENT": (100, 10),
    ]

    /// Deep links written without their scheme; the app's scheme is prepended at run time.
    public static let actions: [String: String] = [
        "OPEN_SETTINGS": "://deep-link?url=settings/general",
        "OPEN_SETTINGS_NEW_TAB": "://deep-link?url=settings/newtab",
        "OPEN_SETTINGS_HOMESCREEN": "://deep-link?url=settings/homepage",
        "OPEN_SETTINGS_WALLPAPERS": "://deep-link?url=settings/wallpaper",
        "OPEN_SETTINGS_EMAIL": "://deep-link?url=settings/mailto",
        "OPEN_SETTINGS_SEARCH_ENGINE": "://deep-link?url=settings/search",
        "OPEN_SETTINGS_PRIVACY": "://deep-link?url=settings/clear-private-data",
        "OPEN_SETTINGS_FXA": "://deep-link?url=settings/fxa",
        "OPEN_SETTINGS_THEME": "://deep-link?url=settings/theme",
        "OPEN_URL": "://open-url",
        "VIEW_BOOKMARKS": "://deep-link?url=homepanel/bookmarks",
        "VIEW_TOP_SITES": "://deep-link?url=homepanel/top-sites",
        "VIEW_READING_LIST": "://deep-link?url=homepanel/reading-list",
        "VIEW_HISTORY": "://deep-link?url=homepanel/history",
        "VIEW_DOWNLOADS": "://deep-link?url=homepanel/downloads",
        "ENABLE_PRIVATE_BROWSING": "://deep-link?url=homepanel/new-private-tab",
        "OPEN_NEW_TAB": "://deep-link?url=homepanel/new-tab",
        "MAKE_DEFAULT_BROWSER": "://deep-link?url=default-browser/system-settings",
        "MAKE_DEFAULT_BROWSER_WITH_TUTORIAL": "://deep-link?url=default-browser/tutorial",
        "OPEN_SHARE_SHEET": "://share-sheet",
    ]

    public static let triggers: [String: String] = [
        "ALWAYS": "true",
        "NEVER": "false",
        "USER_RECENTLY_INSTALLED": "days_since_install < 7",
        "USER_RECENTLY_UPDATED": "days_since_update < 7 && days_since_install != days_since_update",
        "USER_TIER_ONE_COUNTRY": "('US' in locale || 'GB' in locale || 'CA' in locale || 'DE' in locale || 'FR' in locale)",
        "USER_EN_SPEAKER": "'en' in locale",
        "USER_ES_SPEAKER": "'es' in locale",
        "USER_DE_SPEAKER": "'de' in locale",
        "USER_FR_SPEAKER": "'fr' in locale",
        "DEVICE_ANDROID": "os == 'Android'",
        "DEVICE_IOS": "os == 'iOS'",
        "DAY_1_AFTER_INSTALL": "days_since_install == 1",
        "DAY_2_AFTER_INSTALL": "days_since_install == 2",
        "DAY_3_AFTER_INSTALL": "days_since_install == 3",
        "DAY_4_AFTER_INSTALL": "days_since_install == 4",
        "DAY_5_AFTER_INSTALL": "days_since_install == 5",
        "MORE_THAN_24H_SINCE_INSTALLED_OR_UPDATED": "days_since_update >= 1",
        "NOT_LAUNCHED_YESTERDAY": "'app_cycle.foreground'|eventLastSeen('Days', 1) > 1",
        "AFTER_THREE_LAUNCHES_THIS_WEEK": "'app_cycle.foreground'|eventSum('Weeks', 1, 0) >= 3",
        "I_AM_DEFAULT_BROWSER": "is_default_browser",
        "I_AM_NOT_DEFAULT_BROWSER": "is_default_browser == false",
        "SUPPORTS_DEFAULT_BROWSER": "os_version|versionCompare('14.!') >= 0",
        "INACTIVE_NEW_USER": "is_inactive_new_user",
        "ALLOWED_TIPS_NOTIFICATIONS": "allowed_tips_notifications",
        "FXA_CURRENTLY_SIGNED_IN": "is_fxa_signed_in == true",
        "SECOND_HOMEPAGE_VIEW": "'homepage_viewed'|eventSum('Years', 4, 0) >= 2",
        "ON_FOURTH_LAUNCH_THIS_YEAR": "'app_cycle.foreground'|eventSum('Years', 1, 0) > 3",
    ]

    /// The behavioural event ids Firefox for iOS records (one registry, so a query for another id is a lint
    /// warning: bug B20).
    public static let eventIDs: Set<String> = ["app_cycle.foreground", "homepage_viewed", "performed_search", "sync.login_completed_view"]

    /// The feature value holding the defaults above (no messages).
    public static var feature: JSONValue {
        .object([
            "styles": .object(styles.mapValues { ["priority": .number(Double($0.priority)), "max-display-count": .number(Double($0.maxDisplayCount))] }),
            "actions": .object(actions.mapValues { .string($0) }),
            "triggers": .object(triggers.mapValues { .string($0) }),
            "on-control": "show-next-message",
            "messages": [:],
        ])
    }

    /// The six default microsurvey options (string ids, resolved through the app's `Microsurvey` table).
    public static let microsurveyOptions = [
        "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption1.v127",
        "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption2.v127",
        "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption3.v127",
        "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption4.v127",
        "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption5.v127",
        "Microsurvey/Microsurvey.Survey.Options.LikertScaleOption6.v129",
    ]
}
