/// The project's version: one number for the three binaries and the libraries, reported by `--version`,
/// `/__admin/info` and `/__control/health`.
public enum TrioVersion {
    /// The version of this build (`--version`, `/__admin/info`, the release archive's name).
    public static let current = "0.2.0"
}
