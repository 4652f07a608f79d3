@testable import MockServer
import Testing

@Suite struct PostgresURLTests {
    @Test func readsEveryPartAndDefaults() throws {
        let url = try PostgresURL("postgres://trio:s%40cret@db.example:6543/study?sslmode=require&pool_max_conns=20")
        #expect(url.user == "trio" && url.password == "s@cret" && url.host == "db.example" && url.port == 6543)
        #expect(url.database == "study" && url.sslMode == "require" && url.poolSize == 20)
        #expect(url.description == "postgres://trio:***@db.example:6543/study")
        let plain = try PostgresURL("postgresql://trio@localhost/study")
        #expect(plain.port == 5432 && plain.sslMode == "prefer" && plain.poolSize == PostgresURL.defaultPoolSize && plain.password == nil)
    }

    @Test(arguments: [
        ("mysql://u@h/d", "is not a postgres://"),
        ("postgres://h/d", "names no user"),
        ("postgres://u@h/", "names no database"),
        ("postgres://u@h:70000/d", "out of range"),
        ("postgres://u@h/d?sslmode=verify-full", "sslmode must be"),
        ("postgres://u@h/d?pool_max_conns=1", "pool_max_conns must be"),
        ("postgres://u@h/d?pool_max_conns=many", "pool_max_conns must be"),
        ("postgres://u@h/d?application_name=x", "'application_name' is not supported"),
    ]) func refusesWithAReason(_ text: String, _ reason: String) {
        do {
            _ = try PostgresURL(text)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.contains(reason), "\(text): \(error.description)")
        }
    }

    @Test func aRefusedURLHidesItsPassword() {
        do {
            _ = try PostgresURL("postgres://u:topsecret@h/d?sslmode=no")
            Issue.record("accepted")
        } catch {
            #expect(!error.description.contains("topsecret"))
        }
    }
}
