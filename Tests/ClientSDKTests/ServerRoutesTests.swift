import Foundation
import Synchronization
import SurveyWire
import Testing
@testable import ClientSDK

@Suite struct ServerRoutesTests {
    @Test func beiwesPageAndTheRoutersOwnCodesMeanTheRouteIsMissing() {
        // Beiwe's 404 page (no JSON code), an empty 405, our router's codes for an unknown path or method.
        for (status, code) in [(404, nil), (405, nil), (404, "not_found"), (405, "method_not_allowed")] as [(Int, String?)] {
            var routes = ServerRoutes()
            #expect(routes.answered(.downloadSurvey, status: status, errorCode: code) == .missing)
            #expect(routes.lacks(.downloadSurvey))
            #expect(!routes.lacks(.confirmNotifications))
        }
    }

    @Test func aRoutesOwnRefusalLeavesItPresent() {
        var routes = ServerRoutes()
        // The survey is gone (the route answered), a server error, a refused login, success.
        for (status, code) in [(404, "survey_not_found"), (500, nil), (403, nil), (401, "invalid_credentials"), (200, nil)] as [(Int, String?)] {
            #expect(routes.answered(.downloadSurvey, status: status, errorCode: code) == .present)
        }
        #expect(routes.missing.isEmpty)
    }

    @Test func aMissingRouteStaysMissingForTheRun() {
        var routes = ServerRoutes()
        _ = routes.answered(.confirmNotifications, status: 404, errorCode: nil)
        // A later answer cannot bring it back (the client no longer asks it).
        _ = routes.answered(.confirmNotifications, status: 200, errorCode: nil)
        #expect(routes.lacks(.confirmNotifications))
    }
}
