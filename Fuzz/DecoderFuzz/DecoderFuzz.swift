import Foundation
import FuzzTargets

// Built two ways:
// - by `scripts/fuzz` with `-sanitize=fuzzer -DFUZZING`: libFuzzer's `main` calls `LLVMFuzzerTestOneInput` with the
//   target named by the FUZZ_TARGET environment variable;
// - in the ordinary build, without them: `decoder-fuzz TARGET FILE...` runs files through a target (to replay a crash).

#if FUZZING
/// The target, read once from FUZZ_TARGET.
nonisolated(unsafe) let selected: FuzzTarget = {
    guard let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        fatalError("set FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selected.run(size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// libFuzzer's entry for programs with a `main` of their own.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// SwiftPM links an executable's entry as `<module>_main`; here it hands the process to libFuzzer.
@_cdecl("decoder_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOne(data, size) }
}
#else
@main
struct DecoderFuzz {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("usage: decoder-fuzz TARGET FILE...  (targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")))\n".utf8))
            exit(64)
        }
        for path in arguments.dropFirst() {
            target.run(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            print("ok \(path)")
        }
    }
}
#endif
