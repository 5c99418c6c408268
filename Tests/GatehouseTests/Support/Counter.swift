actor Counter {
    private(set) var value = 0
    func increment() -> Int {
        value += 1
        return value
    }
}
