/// The device's push token and whether the study server has been told it, persisted in the client's state.
///
/// The server learns a token at registration (`fcm_token`) or through `/set_fcm_token`. A token is saved *before* it is
/// used, with `serverKnows = false`; it turns true only when a request carrying that very token succeeded. So a token
/// rotated while a registration with the old one was in flight, a renewal while not yet registered, or a crash between
/// saving a new token and telling the server, all leave `needsAnnouncement` true, and the next step (at once, or at the
/// next start) sends `/set_fcm_token`. The I/O is the client's; this type only decides.
struct RelayLink: Codable, Sendable, Equatable {
    /// The token in use; nil before the first one.
    private(set) var token: String?
    /// The token the server last accepted (at registration or by `/set_fcm_token`).
    private(set) var announced: String?

    init(token: String? = nil, announced: String? = nil) {
        self.token = token
        self.announced = announced
    }

    /// True when the server holds the token in use.
    var serverKnows: Bool { token != nil && announced == token }

    /// A new token from the relay (first one, or after a rotation or an uninstall).
    mutating func obtained(_ newToken: String) { token = newToken }

    /// A request carrying `sent` succeeded (registration or `/set_fcm_token`). A token that was replaced meanwhile does
    /// not count for the new one.
    mutating func serverAccepted(_ sent: String) { announced = sent }

    /// Whether `/set_fcm_token` must be sent: registered, a token in use, and the server not holding it.
    func needsAnnouncement(registered: Bool) -> Bool { registered && token != nil && !serverKnows }
}
