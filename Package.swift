// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "survey-trio",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SurveyWire", targets: ["SurveyWire"]),
        .library(name: "Scheduling", targets: ["Scheduling"]),
        .library(name: "Messaging", targets: ["Messaging"]),
        .library(name: "SurveyCrypto", targets: ["SurveyCrypto"]),
        .library(name: "Transport", targets: ["Transport"]),
        .library(name: "ClientSDK", targets: ["ClientSDK"]),
        .library(name: "MockServer", targets: ["MockServer"]),
        .library(name: "PushRelay", targets: ["PushRelay"]),
        .library(name: "TrioTesting", targets: ["TrioTesting"]),
        .library(name: "TrioLoad", targets: ["TrioLoad"]),
        .executable(name: "mock-server", targets: ["mock-server"]),
        .executable(name: "push-relay", targets: ["push-relay"]),
        .executable(name: "survey-cli", targets: ["survey-cli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // Already under Hummingbird; named for the relay's own connection handler (NIO's HTTP/1 codec and channels).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // Already under Hummingbird; named for HTTP/2 with prior knowledge (h2c) on the relay's plain port.
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        // The mock server's second store (`--database postgres://...`): several instances on one database.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Under postgres-nio; named for the TLS settings of `sslmode=prefer|require`.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // Under postgres-nio; named for the relay's FCM OAuth2 (RS256 service-account keys and their signatures).
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // Under postgres-nio; named for the relay's TLS port: its CA and certificate, made at start.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        // `swift package generate-documentation` (scripts/docs): DocC for ClientSDK, SurveyWire and TrioTesting.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System libraries.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // Pure modules.
        .target(name: "SurveyWire", dependencies: ["Scheduling"], swiftSettings: swiftSettings),
        .target(name: "Scheduling", swiftSettings: swiftSettings),
        // JEXL-dialect evaluator, event store, messages, microsurveys, feature merging, onboarding (SHA-256 from
        // SurveyCrypto for Nimbus's sampling hash).
        .target(name: "Messaging", dependencies: ["SurveyWire", "Scheduling", "SurveyCrypto"], swiftSettings: swiftSettings),

        // Wrappers over C libraries.
        .target(name: "SurveyCrypto", dependencies: ["COpenSSL", "CFastPBKDF2"], swiftSettings: swiftSettings),
        // PBKDF2-HMAC-SHA1 on the CPU's SHA extensions (portable fallback): Beiwe's password hash, the server's hot path.
        .target(name: "CFastPBKDF2"),
        .target(
            name: "Transport",
            dependencies: ["CCurl", "CZlib", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),

        // The SDK.
        .target(
            name: "ClientSDK",
            dependencies: [
                "SurveyWire", "Scheduling", "SurveyCrypto", "Transport", "Messaging",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // What both server processes share: READY line, supervision, JSON errors, /metrics.
        .target(
            name: "ServerSupport",
            dependencies: [
                "SurveyWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // The servers.
        .target(
            name: "MockServer",
            dependencies: [
                "SurveyWire", "Scheduling", "SurveyCrypto", "Transport", "ServerSupport", "Messaging",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The API reference (docs/openapi/mock-server.json, linked), compiled in: served at /__admin/openapi.json.
            resources: [.embedInCode("Resources/openapi.json")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "PushRelay",
            dependencies: [
                "SurveyWire", "ServerSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // docs/openapi/push-relay.json (linked), compiled in: served at /__control/openapi.json.
            resources: [.embedInCode("Resources/openapi.json")],
            swiftSettings: swiftSettings
        ),

        // Test kit: launches the real executables.
        .target(
            name: "TrioTesting",
            dependencies: [
                "SurveyWire", "Scheduling", "Transport", "ClientSDK", "SurveyCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The load tool behind `survey-cli load` (registration and push drivers, HdrHistogram reports), apart from the
        // test kit so that test suites do not link it.
        .target(
            name: "TrioLoad",
            dependencies: [
                "TrioTesting", "SurveyWire", "Transport", "SurveyCrypto", "ServerSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: swiftSettings
        ),

        // Many SDK devices in one process, over HTTP (`survey-cli devices serve`, PROTOCOL.md §8).
        .target(
            name: "DeviceHost",
            dependencies: [
                "ClientSDK", "SurveyWire", "Transport", "ServerSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // docs/openapi/survey-devices.json (linked), compiled in: served at /__devices/openapi.json.
            resources: [.embedInCode("Resources/openapi.json")],
            swiftSettings: swiftSettings
        ),

        // Thin executables.
        .executableTarget(
            name: "mock-server",
            dependencies: [
                "MockServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "push-relay",
            dependencies: [
                "PushRelay", "SurveyWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "survey-cli",
            dependencies: [
                "ClientSDK", "TrioTesting", "TrioLoad", "SurveyWire", "Scheduling", "Messaging", "DeviceHost", "ServerSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // Fuzzing: the network-facing decoders as functions of arbitrary bytes (replayed by the tests), and the libFuzzer
        // driver `scripts/fuzz` builds with -sanitize=fuzzer.
        .target(name: "FuzzTargets", dependencies: ["SurveyWire", "Scheduling", "Messaging", "SurveyCrypto", "Transport"],
                swiftSettings: swiftSettings),
        .executableTarget(name: "decoder-fuzz", dependencies: ["FuzzTargets"], path: "Fuzz/DecoderFuzz", swiftSettings: swiftSettings),

        // Benchmarks (run by hand in release; see README "Performance").
        .executableTarget(
            name: "advance-benchmark",
            dependencies: ["TrioTesting", "TrioLoad", "SurveyWire", "Scheduling", "SurveyCrypto", "Transport"],
            path: "Benchmarks/AdvanceBenchmark",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "crypto-benchmark",
            dependencies: ["SurveyCrypto"],
            path: "Benchmarks/CryptoBenchmark",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "parser-benchmark",
            dependencies: ["FuzzTargets", "SurveyWire", "Scheduling", "Messaging", "Transport"],
            path: "Benchmarks/ParserBenchmark",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "relay-floor-nio",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            path: "Benchmarks/RelayFloorNIO",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "sdk-benchmark",
            dependencies: ["ClientSDK"],
            path: "Benchmarks/SDKBenchmark",
            swiftSettings: swiftSettings
        ),

        // Tests.
        .testTarget(name: "SurveyWireTests", dependencies: ["SurveyWire"], path: "Tests/SurveyWireTests"),
        .testTarget(name: "SchedulingTests", dependencies: ["Scheduling"], path: "Tests/SchedulingTests"),
        .testTarget(name: "MessagingTests", dependencies: ["Messaging", "SurveyWire"], path: "Tests/MessagingTests"),
        .testTarget(name: "SurveyCryptoTests", dependencies: ["SurveyCrypto"], path: "Tests/SurveyCryptoTests"),
        .testTarget(name: "PushRelayTests", dependencies: ["PushRelay", "SurveyWire", .product(name: "GRDB", package: "GRDB.swift"),
                                                         .product(name: "Crypto", package: "swift-crypto"),
                                                         .product(name: "_CryptoExtras", package: "swift-crypto")],
                    path: "Tests/PushRelayTests"),
        .testTarget(name: "DeviceHostTests", dependencies: ["DeviceHost", "SurveyWire"], path: "Tests/DeviceHostTests"),
        .testTarget(name: "APIReferenceTests", dependencies: ["MockServer", "PushRelay", "ServerSupport", "DeviceHost",
                                                              .product(name: "Logging", package: "swift-log")],
                    path: "Tests/APIReferenceTests"),
        .testTarget(name: "MockServerTests", dependencies: ["MockServer", "SurveyCrypto", "ServerSupport", "TrioTesting",
                                                          .product(name: "Logging", package: "swift-log"),
                                                          .product(name: "GRDB", package: "GRDB.swift"),
                                                          .product(name: "PostgresNIO", package: "postgres-nio")], path: "Tests/MockServerTests"),
        .testTarget(name: "ServerSupportTests",
                    dependencies: ["ServerSupport", .product(name: "Hummingbird", package: "hummingbird"),
                                   .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                                   .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
                                   .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
                                   "SurveyWire"],
                    path: "Tests/ServerSupportTests"),
        .testTarget(name: "ClientSDKTests", dependencies: ["ClientSDK", "SurveyWire", "SurveyCrypto", "Transport"], path: "Tests/ClientSDKTests",
                    // Directories written by an earlier SDK, opened by `OnDiskFormatTests` (read through #filePath).
                    exclude: ["Fixtures"]),
        .testTarget(name: "FuzzTargetsTests", dependencies: ["FuzzTargets"], path: "Tests/FuzzTargetsTests"),
        .testTarget(name: "TrioLoadTests", dependencies: ["TrioLoad", "SurveyWire", "Transport",
                                                        .product(name: "NIOCore", package: "swift-nio"),
                                                        .product(name: "NIOPosix", package: "swift-nio"),
                                                        .product(name: "NIOHTTP1", package: "swift-nio")],
                    path: "Tests/TrioLoadTests"),
        .testTarget(
            name: "TransportTests",
            dependencies: [
                "Transport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/TransportTests"
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "TrioTesting", "TrioLoad", "ClientSDK", "SurveyWire", "Scheduling", "SurveyCrypto", "Transport", "Messaging",
                // Seeds a server's database with rows the API refuses, to test what a server does with them at start.
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "IntegrationTests",
            // Read through #filePath (LoadReportTests runs it with python3), not a resource.
            exclude: ["Fixtures"]
        ),
    ]
)
