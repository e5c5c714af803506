"""Room-level import graph of dreamer_gym (issue 28 before/after): edges, two-way room pairs, imports against the
layering of docs/design-notes.md. Run from the repository root: `python -m research.import_graph`."""
import collections
import grimp

LAYERS = [  # top first; rooms on one line are independent siblings
    ["cli", "cli_args", "cli_errors", "remote", "serve"],
    ["testing"],
    ["studies"],
    ["leaderboard"],
    ["methods"],
    ["training"],
    ["consolidators"],
    ["envs", "registration"],
    ["service"],
    ["contract"],
    ["evaluation"],
    ["pool"],
    ["acquisition", "store"],
    ["agents"],
    ["suites", "llm"],
    ["memory", "prompts"],
    ["registry", "_moved"],
    ["errors", "paths"],
]
LEVEL = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}
g = grimp.build_graph("dreamer_gym")
room = lambda m: m.split(".")[1] if m.count(".") >= 1 else "__init__"
edges = collections.Counter()
up = []
for m in g.modules:
    for i in g.find_modules_directly_imported_by(m):
        a, b = room(m), room(i)
        if a == b or a == "__init__" or b == "__init__":
            continue
        edges[(a, b)] += 1
        same_room_group = LEVEL.get(a) == LEVEL.get(b) and a in ("cli", "cli_args", "cli_errors", "remote", "serve", "envs", "registration")
        if a in LEVEL and b in LEVEL and (LEVEL[b] < LEVEL[a] or (LEVEL[a] == LEVEL[b] and not same_room_group)):
            up.append(f"{m} -> {i}")
rooms = sorted({a for a, _ in edges} | {b for _, b in edges})
cycles = [(a, b) for (a, b) in edges if (b, a) in edges and a < b]
print(f"rooms: {len(rooms)}  room edges: {len(edges)}  module imports across rooms: {sum(edges.values())}")
print(f"two-way room pairs (cycles): {len(cycles)}: {cycles}")
print(f"imports against the layering (lower -> higher, or sibling -> sibling): {len(up)}")
for line in sorted(up):
    print("  ", line)
print()
print("| room | imports |")
print("|---|---|")
for a in sorted(rooms, key=lambda r: (LEVEL.get(r, 99), r)):
    print(f"| {a} | {', '.join(sorted(b for (x, b) in edges if x == a))} |")
