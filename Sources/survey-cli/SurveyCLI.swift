import ArgumentParser
import Foundation
import SurveyWire

/// `survey-cli`: runs the trio and drives a simulated device.
@main
struct SurveyCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "survey-cli",
        abstract: "Run the mock study server and push relay, and drive a simulated participant device.",
        version: "survey-cli \(TrioVersion.current)",
        subcommands: [Up.self, Healthcheck.self, Demo.self, Load.self, Device.self, Devices.self, TraceCommand.self, MessagingCommand.self])
}
