/// Which pack files to combine so that a store that receives one small pack per fetch keeps a few
/// packs, not thousands (each open pack costs a file descriptor, an index map and a slot that every
/// object lookup scans). Pure: sizes in, the packs to roll up out.
///
/// Geometric, like `git repack --geometric=2`: sorted by size, every pack that is kept is at least
/// twice as large as all smaller packs together; the smaller ones are rolled up into one. So the
/// number of packs stays logarithmic in the store's size and each byte is rewritten a logarithmic
/// number of times. Nothing happens until there are more than `threshold` small packs, so a fetch
/// does not rewrite packs every time. Packs larger than `maxBytes` are left as they are: rolling
/// them up again would make the pack builder's memory grow with the store (a small device's
/// resident memory would follow); a store made of such packs is `git gc`'s work.
public enum PackPlan {
    public static let threshold = 8
    public static let maxBytes = 4 << 20
    /// At most this many objects go into one roll-up: the new pack's list of ids and offsets is
    /// held whole until its index is written (32 bytes an object), beside the store's own index. A
    /// first sync's 80 packs of 100k objects in one roll-up took a watch from 54 to 68 MB.
    public static let maxObjects = 32_768

    /// The first packs of `chosen` (smallest first, as `toCombine` gives them) whose objects add up
    /// to at most `maxObjects`, and at least two; empty when fewer than two are chosen. The others
    /// wait for the next roll-up, which the agent starts when this one is done.
    public static func capped(_ chosen: [Int], objects: [Int], maxObjects: Int = PackPlan.maxObjects) -> [Int] {
        var total = 0
        var taken: [Int] = []
        for i in chosen {
            if taken.count >= 2, total + objects[i] > maxObjects { break }
            total += objects[i]
            taken.append(i)
        }
        return taken.count >= 2 ? taken : []
    }

    /// Indices (into `sizes`) of the packs to combine; empty when the packs are fine as they are.
    public static func toCombine(sizes: [Int], threshold: Int = PackPlan.threshold, factor: Int = 2,
                                 maxBytes: Int = PackPlan.maxBytes) -> [Int] {
        let small = sizes.indices.filter { sizes[$0] <= maxBytes }
        guard small.count > threshold else { return [] }
        let order = small.sorted { sizes[$0] < sizes[$1] }
        var smaller = [Int](repeating: 0, count: order.count)  // sum of the sizes of all smaller packs
        for i in order.indices.dropFirst() { smaller[i] = smaller[i - 1] + sizes[order[i - 1]] }
        // From the largest down, keep packs while each outweighs all smaller ones together.
        var split = 0
        for i in order.indices.reversed() where i > 0 {
            if sizes[order[i]] < factor * smaller[i] {
                split = i + 1
                break
            }
        }
        guard split >= 2 else { return [] }
        return Array(order[..<split])
    }
}
