// swift-tools-version: 6.0
import PackageDescription

// Gatehouse's pure values and rules, in a package of their own: its manifest names swift-crypto and nothing else, so
// that no file here can import the server stack, and its tests build and run in seconds
// (`swift test --package-path GatehouseCore`). The gateway depends on it by path.
let package = Package(
    name: "GatehouseCore",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "GatehouseCore", targets: ["GatehouseCore"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0")
    ],
    targets: [
        .target(
            name: "GatehouseCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto")
            ]
        ),
        .testTarget(
            name: "GatehouseCoreTests",
            dependencies: ["GatehouseCore"]
        ),
    ]
)
