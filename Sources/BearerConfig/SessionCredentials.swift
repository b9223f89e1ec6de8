import BearerCrypto
import BearerIO
import Glibc

/// The keys a session's settings name, read from their files: what its token requests sign with
/// (client_key_file, service_account_file) and the TLS client certificate it presents.
///
/// Made by the start-up that uses them (the proxy's start and SIGHUP's re-read, `login`, `logout`),
/// never kept in the configuration: loading reads the files through the same `read` to check them
/// and keeps only what `--check` shows (`KeyFileFacts`).
package struct SessionCredentials: Sendable {
    package var signingKey: SigningKey?
    package var serviceAccount: ServiceAccountKey?
    package var tlsCertificate: TLSClientCertificate?

    package init(
        signingKey: SigningKey? = nil,
        serviceAccount: ServiceAccountKey? = nil,
        tlsCertificate: TLSClientCertificate? = nil
    ) {
        self.signingKey = signingKey
        self.serviceAccount = serviceAccount
        self.tlsCertificate = tlsCertificate
    }

    /// The keys `session` names (`places`: where its keys were set); the first file that cannot be
    /// used is thrown, in the words and at the line loading gives it.
    package init(reading session: SessionSettings, places: SettingPlaces) throws(ConfigurationError) {
        let (credentials, errors) = Self.read(session.credentials, places: places)
        if let first = errors.first { throw first }
        self = credentials
    }

    /// Reads every file `settings` names, once; a file that cannot be used (missing, unreadable,
    /// encrypted, not a key, an unsupported kind) is an error at its key's line naming the file.
    static func read(
        _ settings: ClientCredentialSettings,
        places: SettingPlaces
    ) -> (SessionCredentials, [ConfigurationError]) {
        var credentials = SessionCredentials()
        var errors: [ConfigurationError] = []
        func failed(_ key: ConfigurationKey, _ message: String) {
            errors.append(ConfigurationError(place: places[key] ?? places.whole, key: key.name, message: message))
        }
        if let path = settings.keyFile {
            do throws(PEMPrivateKey.LoadError) {
                credentials.signingKey = try SigningKey.load(file: path)
            } catch {
                failed(.clientKeyFile, error.description)
            }
        }
        if let path = settings.serviceAccountFile {
            do throws(PEMPrivateKey.LoadError) {
                credentials.serviceAccount = try ServiceAccountKey.load(file: path)
            } catch {
                failed(.serviceAccountFile, error.description)
            }
        }
        if let certificateFile = settings.tlsCertificateFile, let keyFile = settings.tlsKeyFile {
            do throws(TLSClientCertificate.LoadError) {
                credentials.tlsCertificate = try TLSClientCertificate.load(
                    certificateFile: certificateFile,
                    keyFile: keyFile
                )
            } catch {
                failed(error.isAboutKey ? .tlsClientKey : .tlsClientCert, error.description)
            }
        }
        return (credentials, errors)
    }

    /// What `--check` and the rules may know of these keys.
    var facts: KeyFileFacts {
        var facts = KeyFileFacts()
        facts.key = self.signingKey.map { ("\($0)", $0.algorithm) }
        facts.serviceAccount = self.serviceAccount.map { ($0.clientEmail, $0.summary) }
        facts.certificate = self.tlsCertificate.map { ($0.subject, $0.certificateCount, "\($0.key.kind)") }
        return facts
    }
}

extension DPoPSettings {
    /// With dpop on, the session's prover, its key made first when there is no file yet (mode 0600,
    /// its folder 0700): for the start-ups that prove (the proxy, `login`), never for loading. An
    /// error at dpop_key_file's line (else dpop's) naming the file.
    package func makeProver(places: SettingPlaces) throws(ConfigurationError) -> DPoPProver? {
        guard self.isEnabled, let path = self.keyFile else { return nil }
        do throws(PEMPrivateKey.LoadError) {
            return DPoPProver(key: try DPoPKeyFile.loadOrCreate(path), keyFile: path)
        } catch {
            throw ConfigurationError(
                place: Self.place(in: places),
                key: Key.dpopKeyFile.name,
                message: error.description
            )
        }
    }

    /// Where a finding about the session's key is placed: dpop_key_file's line, else dpop's.
    static func place(in places: SettingPlaces) -> String {
        places[.dpopKeyFile] ?? places[.dpop] ?? places.whole
    }
}
