import ArgumentParser
import Foundation

/// `survey-cli`: runs the trio and drives a simulated device.
@main
struct SurveyCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "survey-cli",
        abstract: "Run the mock study server and push relay, and drive a simulated participant device.",
        subcommands: [Up.self, Demo.self, Load.self, Device.self, MessagingCommand.self])
}
