import CZlib

/// gzip for `Content-Encoding: gzip` bodies, over zlib.
public enum Gzip {
    /// A failure to inflate or deflate, or a body over the size limit.
    public struct Error: Swift.Error, Sendable, Equatable {
        /// `too_large` or `corrupt`.
        public var code: String
        public var message: String
    }

    /// gzip-compresses bytes (`zlibWrapper`: the zlib format of RFC 1950 instead, which ``decompress(_:limit:)`` reads too).
    public static func compress(_ input: [UInt8], level: Int32 = 6, zlibWrapper: Bool = false) -> [UInt8] {
        var stream = z_stream()
        let initialized = zlibWrapper ? czlib_deflate_init_zlib(&stream, level) : czlib_deflate_init_gzip(&stream, level)
        precondition(initialized == Z_OK, "deflateInit2 failed")
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        var input = input
        let produced: Int = input.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                let result = deflate(&stream, Z_FINISH)
                precondition(result == Z_STREAM_END, "deflate with a deflateBound buffer must finish")
                return outBuf.count - Int(stream.avail_out)
            }
        }
        return Array(output.prefix(produced))
    }

    /// Inflates gzip (or zlib) data, failing with `too_large` past `limit` output bytes.
    ///
    /// Concatenated gzip members (RFC 1952 §2.2) are inflated one after another, as `gunzip` does; any other bytes after
    /// the end of the data are `corrupt` (trailing garbage is refused, never silently dropped).
    public static func decompress(_ input: [UInt8], limit: Int) throws(Gzip.Error) -> [UInt8] {
        var stream = z_stream()
        guard czlib_inflate_init_auto(&stream) == Z_OK else { throw Error(code: "corrupt", message: "inflateInit2 failed") }
        defer { inflateEnd(&stream) }
        var input = input
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var status: Int32 = Z_OK
        var trailing = false
        input.withUnsafeMutableBufferPointer { inBuf in
            stream.next_in = inBuf.baseAddress
            stream.avail_in = uInt(inBuf.count)
            while true {
                repeat {
                    chunk.withUnsafeMutableBufferPointer { outBuf in
                        stream.next_out = outBuf.baseAddress
                        stream.avail_out = uInt(outBuf.count)
                        status = inflate(&stream, Z_NO_FLUSH)
                        output.append(contentsOf: outBuf.prefix(outBuf.count - Int(stream.avail_out)))
                    }
                } while status == Z_OK && output.count <= limit && !(stream.avail_in == 0 && stream.avail_out != 0)
                guard status == Z_STREAM_END, stream.avail_in > 0, output.count <= limit else { break }
                // More input after a complete member: another member (magic 1f 8b), or garbage.
                let offset = inBuf.count - Int(stream.avail_in)
                guard stream.avail_in >= 2, inBuf[offset] == 0x1F, inBuf[offset + 1] == 0x8B, inflateReset(&stream) == Z_OK else {
                    trailing = true
                    break
                }
                status = Z_OK
            }
        }
        if output.count > limit { throw Error(code: "too_large", message: "more than \(limit) bytes after decompression") }
        guard status == Z_STREAM_END else { throw Error(code: "corrupt", message: "not valid gzip data (zlib status \(status))") }
        if trailing { throw Error(code: "corrupt", message: "bytes after the end of the gzip data") }
        return output
    }
}
