import Foundation
import Histogram
import Transport

/// HdrHistogram's standard compressed encoding (V2: ZigZag LEB128 counts with zero runs, zlib-deflated, base64; the
/// text starts `HISTF`), as the Java, C, Go, Rust and Python HdrHistogram libraries read and write it. Load reports
/// carry their histograms this way, so `load merge` can add them exactly and other HdrHistogram tools can read them.
public enum HistogramCodec {
    static let encodingCookie: UInt32 = 0x1c84_9313
    static let compressedCookie: UInt32 = 0x1c84_9314

    /// A histogram in the report's bounds: microseconds from 1 µs to 1 hour, 3 significant digits.
    public static func make() -> Histogram<UInt64> {
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    }

    /// Bucket layout of a histogram with lowest discernible value 1 and `digits` significant digits.
    struct Layout {
        let subBucketHalfCountMagnitude: Int
        var subBucketHalfCount: Int { 1 << subBucketHalfCountMagnitude }
        var subBucketMask: UInt64 { UInt64(2 * subBucketHalfCount - 1) }

        init(digits: Int) {
            let largest = 2 * Int(pow(10.0, Double(digits)))
            let magnitude = Int(Double.log2(Double(largest)).rounded(.up))
            subBucketHalfCountMagnitude = max(magnitude, 1) - 1
        }

        func index(of value: UInt64) -> Int {
            let leadingZeroCountBase = 64 - subBucketHalfCountMagnitude - 1
            let bucket = leadingZeroCountBase - (value | subBucketMask).leadingZeroBitCount
            let subBucket = Int(value >> UInt64(bucket))
            return ((bucket + 1) << subBucketHalfCountMagnitude) + (subBucket - subBucketHalfCount)
        }

        func value(at index: Int) -> UInt64 {
            var bucket = (index >> subBucketHalfCountMagnitude) - 1
            var subBucket = (index & (subBucketHalfCount - 1)) + subBucketHalfCount
            if bucket < 0 {
                subBucket -= subBucketHalfCount
                bucket = 0
            }
            return UInt64(subBucket) << UInt64(bucket)
        }
    }

    /// The histogram's compressed encoding, base64.
    public static func encode(_ histogram: Histogram<UInt64>) -> String {
        let digits = Int(histogram.numberOfSignificantValueDigits.rawValue)
        let layout = Layout(digits: digits)
        var counts: [Int: UInt64] = [:]
        for bucket in histogram.recordedValues() where bucket.count > 0 {
            counts[layout.index(of: bucket.value), default: 0] += UInt64(bucket.count)
        }
        var payload: [UInt8] = []
        var next = 0
        for index in counts.keys.sorted() {
            if index > next { appendZigZag(&payload, -Int64(index - next)) }
            appendZigZag(&payload, Int64(counts[index]!))
            next = index + 1
        }
        var plain: [UInt8] = []
        appendBE(&plain, encodingCookie)
        appendBE(&plain, UInt32(payload.count))
        appendBE(&plain, UInt32(0))                                  // normalizing index offset
        appendBE(&plain, UInt32(digits))
        appendBE(&plain, UInt64(histogram.lowestDiscernibleValue))
        appendBE(&plain, UInt64(histogram.highestTrackableValue))
        appendBE(&plain, Double(1).bitPattern)                       // integer to double conversion ratio
        plain += payload
        let deflated = Gzip.compress(plain, zlibWrapper: true)
        var wrapped: [UInt8] = []
        appendBE(&wrapped, compressedCookie)
        appendBE(&wrapped, UInt32(deflated.count))
        wrapped += deflated
        return Data(wrapped).base64EncodedString()
    }

    /// A histogram decoded from ``encode(_:)``'s format (or another HdrHistogram library's V2 compressed encoding).
    public static func decode(_ text: String) throws(HistogramCodecError) -> Histogram<UInt64> {
        guard let data = Data(base64Encoded: text), data.count >= 8 else { throw .init("not base64, or too short") }
        let wrapped = [UInt8](data)
        guard readBE32(wrapped, 0) == compressedCookie else { throw .init("not a V2 compressed HdrHistogram encoding (cookie)") }
        let length = Int(readBE32(wrapped, 4))
        guard length == wrapped.count - 8 else { throw .init("compressed length \(length) does not match the data") }
        let plain: [UInt8]
        do { plain = try Gzip.decompress(Array(wrapped[8...]), limit: 64 << 20) } catch { throw .init("cannot inflate: \(error.message)") }
        guard plain.count >= 40, readBE32(plain, 0) == encodingCookie else { throw .init("not a V2 HdrHistogram encoding (cookie)") }
        let payloadLength = Int(readBE32(plain, 4))
        let digits = Int(readBE32(plain, 12))
        let lowest = readBE64(plain, 16)
        let highest = readBE64(plain, 24)
        guard payloadLength == plain.count - 40 else { throw .init("payload length does not match") }
        guard (1...5).contains(digits), let significant = SignificantDigits(rawValue: Int8(digits)) else {
            throw .init("unsupported significant digits \(digits)")
        }
        guard lowest == 1, highest >= 2 else { throw .init("only histograms with lowest discernible value 1 are supported") }
        var histogram = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: highest, numberOfSignificantValueDigits: significant)
        let layout = Layout(digits: digits)
        var offset = 40
        var index = 0
        while offset < plain.count {
            let value = try readZigZag(plain, &offset)
            if value < 0 {
                index += Int(-value)
            } else {
                if value > 0 {
                    // Recorded at the bucket's highest equivalent value, so the decoded maximum is what HdrHistogram's
                    // own decoders report (the exact maximum is not part of the encoding).
                    let lowestEquivalent = layout.value(at: index)
                    let highestEquivalent = lowestEquivalent + histogram.sizeOfEquivalentRangeForValue(lowestEquivalent) - 1
                    guard histogram.record(highestEquivalent, count: UInt64(value)) else { throw .init("a count lies beyond the histogram's range") }
                }
                index += 1
            }
        }
        return histogram
    }

    static func appendBE<T: FixedWidthInteger>(_ bytes: inout [UInt8], _ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    static func appendZigZag(_ bytes: inout [UInt8], _ value: Int64) {
        var v = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        // LEB128 as HdrHistogram writes it: at most 9 bytes, the ninth carrying 8 bits.
        for _ in 0..<8 {
            if v < 0x80 {
                bytes.append(UInt8(v))
                return
            }
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: v))
    }

    static func readZigZag(_ bytes: [UInt8], _ offset: inout Int) throws(HistogramCodecError) -> Int64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        for step in 0..<9 {
            guard offset < bytes.count else { throw .init("truncated count") }
            let byte = bytes[offset]
            offset += 1
            if step == 8 {
                result |= UInt64(byte) << 56
                break
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return Int64(bitPattern: (result >> 1) ^ (0 &- (result & 1)))
    }

    static func readBE32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func readBE64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        bytes[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A histogram text that is not HdrHistogram's V2 compressed encoding.
public struct HistogramCodecError: Error, Sendable, CustomStringConvertible {
    /// What is wrong with it.
    public var message: String
    init(_ message: String) { self.message = message }
    /// `histogram: message`.
    public var description: String { "histogram: \(message)" }
}
