import spinney

with spinney.open("hello.db") as db:
    accounts = db.table("accounts", "btree")  # a B-tree table
    audit = db.table("audit")  # an LSM table

    # All or nothing, across tables, also across a crash.
    with db.batch() as batch:
        batch.put(accounts, b"alice", b"90")
        batch.put(accounts, b"bob", b"110")
        batch.put(audit, b"0001", b"alice->bob 10")

    # Committed on exit; run again from the start on a conflict.
    def pay_bob(tx):
        bob = int(tx.get_for_update(accounts, b"bob"))
        tx.put(accounts, b"bob", str(bob + 5).encode())
        tx.put(audit, b"0002", b"bank->bob 5")

    db.transact(pay_bob)

    for key, value in accounts.range(b"a", b"c"):
        print(key.decode(), "=", value.decode())
    print(sorted(audit.keys()), accounts.get(b"carol", b"none"))
