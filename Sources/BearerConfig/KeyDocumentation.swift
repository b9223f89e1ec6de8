/// What the reference says about one key of the table: the shape of its value, its default where the
/// table's own (what `--check` shows for an empty file) says too little, the value the example file
/// shows, and one paragraph.
///
/// Each key is described once, here, and docs/configuration.md, proxy.conf.example and
/// bearer-proxy.conf(5) are generated from it (`swift run bearer-docs`); where a key may be set follows
/// from its scope. A test fails when a key of `Configuration.keys` has no entry, or when a checked-in
/// file differs from what this table makes.
package struct KeyDocumentation: Sendable {
    /// The key described.
    package let key: ConfigurationKey
    /// The value's shape: `duration`, `HOST:PORT, [IPv6]:PORT or unix:/path; comma-separated`.
    package let value: String
    /// The default in words, where the table's (`ConfigurationKey.defaultValue`) is unset or depends on
    /// the machine or on other keys (`workers`: the number of cores).
    package let defaultText: String?
    /// What the example file shows after `key = `, when it is not the default.
    package let example: String?
    /// What the key does, as one paragraph.
    package let paragraph: String

    init(
        _ key: ConfigurationKey,
        _ value: String,
        default defaultText: String? = nil,
        example: String? = nil,
        _ paragraph: String
    ) {
        self.key = key
        self.value = value
        self.defaultText = defaultText
        self.example = example
        self.paragraph = paragraph
    }

    /// The default as the reference states it: the documented one, else the table's, else `none`.
    package var defaultDescription: String {
        self.defaultText ?? self.key.defaultValue ?? "none"
    }
}

/// A topic of the reference (and a section of proxy.conf.example): its keys, in the order they are
/// read, and the paragraph that introduces them.
package struct KeyGroup: Sendable {
    package let title: String
    /// What the keys have in common, as one paragraph; empty for none.
    package let introduction: String
    /// A config that shows the keys together, indented under the introduction; empty for none.
    package let sample: String
    /// What the sample does, as a paragraph after it; empty for none.
    package let sampleOutcome: String
    package let keys: [KeyDocumentation]

    init(
        title: String,
        introduction: String,
        sample: String = "",
        sampleOutcome: String = "",
        keys: [KeyDocumentation]
    ) {
        self.title = title
        self.introduction = introduction
        self.sample = sample
        self.sampleOutcome = sampleOutcome
        self.keys = keys
    }
}

extension ConfigurationKey {
    /// The value `--check` shows for a configuration with nothing set: the table's default.
    package var defaultValue: String? {
        let empty = Configuration()
        return self.show(empty.process, empty.defaultSession)
    }

    /// Where the key may be set, from its scope.
    package var placement: String {
        switch self.scope {
        case .process: "outside any section (process-wide)"
        case .session: "outside any section (the default session) and in [session NAME] sections"
        case .namedSession: "in [session NAME] sections only"
        }
    }

    /// The key's entry in the documentation table; nil for a key nobody documented yet.
    package var documentation: KeyDocumentation? {
        Configuration.keyGroups.lazy.flatMap(\.keys).first { $0.key == self }
    }
}

extension Configuration {
    /// Every key the config file accepts, in `--check`'s order.
    package static var allKeys: [ConfigurationKey] { Self.keys }

    /// The keys of `keys` that `groups` does not document, or documents more than once: what the
    /// docs test reports.
    package static func undocumentedKeys(_ keys: [ConfigurationKey], in groups: [KeyGroup]) -> [String] {
        let documented = groups.flatMap(\.keys)
        return keys.compactMap { key in
            let entries = documented.filter { $0.key == key }
            if entries.isEmpty { return "\(key.name) has no documentation" }
            if entries.count > 1 { return "\(key.name) is documented \(entries.count) times" }
            let entry = entries[0]
            if entry.paragraph.isEmpty || entry.value.isEmpty { return "\(key.name) has an empty paragraph or value" }
            return nil
        }
    }
}
