import Crypto
import Foundation
import X509

/// A certificate authority of one's own and a server certificate it signed (ECDSA P-256, PEM): what
/// `gatehouse dev --tls` serves `https://localhost` with, and what the tests trust. Never for production.
public struct DevelopmentCertificates: Sendable {
    public let authorityPEM: String
    public let certificatePEM: String
    public let privateKeyPEM: String

    /// A new authority, and a certificate for `names` valid from an hour ago for `days`.
    public static func make(names: [String] = ["localhost"], days: Int = 365, now: Date = Date()) throws -> DevelopmentCertificates {
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName {
            OrganizationName("Gatehouse development")
            CommonName("Gatehouse development CA \(Int(now.timeIntervalSince1970))")
        }
        let from = now.addingTimeInterval(-3600)
        let until = now.addingTimeInterval(TimeInterval(days) * 86_400)
        let authority = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(authorityKey.publicKey), notValidBefore: from, notValidAfter: until,
            issuer: authorityName, subject: authorityName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(authorityKey))
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: from, notValidAfter: until,
            issuer: authorityName, subject: try DistinguishedName { CommonName(names.first ?? "localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names.map { .dnsName($0) })
            },
            issuerPrivateKey: .init(authorityKey))
        return DevelopmentCertificates(
            authorityPEM: try authority.serializeAsPEM().pemString, certificatePEM: try certificate.serializeAsPEM().pemString,
            privateKeyPEM: try Certificate.PrivateKey(key).serializeAsPEM().pemString)
    }
}
