/// "Did you mean": the candidate a typo most likely meant (config keys, subcommand names).
public enum Spelling {
    /// The closest of `candidates` to `word`, if one is close enough to be a typo of it.
    public static func nearest(_ word: String, in candidates: [String]) -> String? {
        candidates
            .map { (candidate: $0, distance: editDistance(word.lowercased(), $0)) }
            .filter { $0.distance <= min(3, max(1, min(word.count, $0.candidate.count) / 2)) }
            .min { $0.distance < $1.distance }?.candidate
    }

    /// Levenshtein distance: insertions, deletions and substitutions of characters.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
