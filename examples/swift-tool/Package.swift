// swift-tools-version: 6.0
// A command-line tool that embeds the survey-trio SDK, as a developer's own package would: it depends on survey-trio
// by path (a release would name its git URL and version instead) and links only the `ClientSDK` product.
import PackageDescription

let package = Package(
    name: "participant-tool",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "survey-trio", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "participant-tool",
            dependencies: [.product(name: "ClientSDK", package: "survey-trio")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
