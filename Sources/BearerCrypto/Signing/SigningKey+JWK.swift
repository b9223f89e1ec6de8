import COpenSSL

extension SigningKey {
    /// The public half as a JWK (RFC 7517, RFC 7518 §6), members in the lexicographic order of an
    /// RFC 7638 thumbprint: `{"crv","kty","x","y"}` for P-256, `{"e","kty","n"}` for RSA. What a
    /// DPoP proof carries in its header (RFC 9449 §4.2).
    package var publicJWK: JSONObjectWriter {
        var jwk = JSONObjectWriter()
        switch self.algorithm {
        case .es256:
            // The uncompressed point, 0x04 ‖ x ‖ y.
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            let read = EVP_PKEY_get_octet_string_param(self.key.pointer, "pub", &point, point.count, &length)
            precondition(read == 1 && length == 65 && point[0] == 4, "a P-256 key without its public point")
            jwk.add("crv", "P-256")
            jwk.add("kty", "EC")
            jwk.add("x", Base64URL.encodedString(point[1..<33]))
            jwk.add("y", Base64URL.encodedString(point[33..<65]))
        case .rs256:
            jwk.add("e", Base64URL.encodedString(self.rsaParameter("e")))
            jwk.add("kty", "RSA")
            jwk.add("n", Base64URL.encodedString(self.rsaParameter("n")))
        }
        return jwk
    }

    /// An RSA key's public modulus or exponent, big-endian without leading zeros (RFC 7518 §6.3.1).
    private func rsaParameter(_ name: String) -> [UInt8] {
        var number: OpaquePointer?
        precondition(EVP_PKEY_get_bn_param(self.key.pointer, name, &number) == 1, "an RSA key without \(name)")
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
        _ = BN_bn2bin(number, &bytes)
        return bytes
    }
}
