import Crypto
import Foundation
import X509

/// A certificate authority of one's own and a certificate it signed for servers and clients (ECDSA P-256, PEM): what
/// `gatehouse dev --tls` serves `https://localhost` with, and what the tests trust and present. Never for production.
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
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames(names.map { .dnsName($0) })
            },
            issuerPrivateKey: .init(authorityKey))
        return DevelopmentCertificates(
            authorityPEM: try authority.serializeAsPEM().pemString, certificatePEM: try certificate.serializeAsPEM().pemString,
            privateKeyPEM: try Certificate.PrivateKey(key).serializeAsPEM().pemString)
    }
}

extension DevelopmentCertificates {
    /// Where `gatehouse dev --tls` keeps its authority and certificate.
    public struct Files: Sendable {
        public let authority: String
        public let certificate: String
        public let privateKey: String
    }

    /// The authority and a certificate for `localhost` in `folder`, made the first time (or again when the
    /// certificate has less than 30 days left); the certificate file holds the authority after the leaf, so that the
    /// gateway in development mode can trust its own listener. The key is readable by its owner only.
    public static func prepare(in folder: String, now: Date = Date()) throws -> Files {
        let files = Files(
            authority: folder + "/development-ca.pem", certificate: folder + "/localhost.pem", privateKey: folder + "/localhost-key.pem")
        let manager = FileManager.default
        if let text = manager.contents(atPath: files.certificate).flatMap({ String(data: $0, encoding: .utf8) }),
            let leaf = try? Certificate(pemEncoded: text), leaf.notValidAfter > now.addingTimeInterval(30 * 86_400),
            manager.fileExists(atPath: files.privateKey), manager.fileExists(atPath: files.authority)
        {
            return files
        }
        try manager.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let made = try make(names: ["localhost"], days: 365, now: now)
        try made.authorityPEM.write(toFile: files.authority, atomically: true, encoding: .utf8)
        try (made.certificatePEM + "\n" + made.authorityPEM + "\n").write(toFile: files.certificate, atomically: true, encoding: .utf8)
        guard manager.createFile(atPath: files.privateKey, contents: Data(made.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: files.privateKey])
        }
        return files
    }
}
