import Glibc

/// Whether bytes are worth handing to zlib: an estimate of their entropy from a sample of at most
/// 4 KiB (eight 512-byte pieces spread over a big object). Photos, video and archives come out
/// near 8 bits a byte, text near 4-5, executables 5-6.5; above `threshold` deflate saves a few
/// percent at best and cost a third of the CPU of a batch of random 4 KB files. Byte counts do not
/// see order: a pattern that uses every byte value evenly (0, 1, ..., 255, 0, 1, ...) is stored
/// whole, which costs room, never bytes.
package enum Incompressible {
    /// Bits per byte above which bytes are stored as they are.
    package static let threshold = 7.5
    /// Below this size the sample says too little (and zlib's cost is small).
    package static let minimumSize = 512

    /// The ranges of an object of `count` bytes that `looks` samples: all of it up to 4 KiB,
    /// else eight 512-byte pieces spread from its start to its end. A reader that has only some
    /// of the bytes at hand (`PackRollUp.deflatableShare`) gathers these and asks `looks` of them:
    /// the same bytes counted, the same answer.
    package static func samples(count: Int) -> [Range<Int>] {
        if count <= 4096 { return [0..<count] }
        let piece = 512, pieces = 8
        let gap = (count - piece) / (pieces - 1)
        return (0..<pieces).map { (($0 * gap)..<($0 * gap + piece)) }
    }

    package static func looks(_ data: UnsafeRawBufferPointer) -> Bool {
        guard data.count >= minimumSize else { return false }
        return withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 256) { counts -> Bool in
            counts.initialize(repeating: 0)
            var sampled = 0
            for range in samples(count: data.count) {
                for i in range { counts[Int(data[i])] &+= 1 }
                sampled += range.count
            }
            // H = log2(n) - (1/n) * sum(c * log2(c)), plus Miller-Madow's (k - 1) / (2n ln 2) for
            // the k byte values seen: counted from a small sample, entropy comes out low (512
            // random bytes: 7.59 on average, and under 7.5 once in 200 draws). Corrected, 512
            // random bytes give 7.90 +- 0.04; text, hex and base64 move up by 0.06 at most.
            var sum = 0.0, seen = 0
            for c in counts where c > 0 {
                seen += 1
                if c > 1 { sum += Double(c) * log2(Double(c)) }
            }
            let n = Double(sampled)
            let bias = Double(seen - 1) / (2 * n * M_LN2)
            return log2(n) - sum / n + bias > threshold
        }
    }
}
