"""The Spring Challenge 2021 board: 37 hexes, their geometry, and the official seeded map generator.

Cells (spring2021.md §2): cube coordinates (x, y, z) with x + y + z = 0. Index 0 is the centre;
rings 1, 2, 3 follow as the official `BoardGenerator` writes them: start at centre + DIRECTIONS[0] * d,
then for orientation o = 0..5 take d steps, each writing a cell and moving towards DIRECTIONS[(o+2) % 6].
Base richness: 3 (lush) for the centre and ring 1, 2 for ring 2, 1 (poor) for ring 3; holes are 0.

Map generation (§3) reproduces the official referee seed for seed: a port of `java.util.Random`
(its published 48-bit LCG), the holes drawn from the Java `HashMap` iteration order of the cells
(`hashmap_order`), and the starting trees drawn exactly as `Game.tryInitStartingTrees` does.
"""

from __future__ import annotations

RING_COUNT = 3  # MAP_RING_COUNT: the network's 534 inputs and 38 actions are sized for 3 rings
NUM_CELLS = 1 + 3 * RING_COUNT * (RING_COUNT + 1)  # 37
# Cube offsets of the sun's / neighbours' directions 0..5 (0 points east in the viewer).
DIRECTIONS = ((1, -1, 0), (1, 0, -1), (0, 1, -1), (-1, 1, 0), (-1, 0, 1), (0, -1, 1))
RICHNESS_BONUS = (0, 0, 2, 4)  # COMPLETE points over the nutrients, by richness 0..3
STARTING_TREE_DISTANCE = 2  # Bronze+: starting trees are more than this far apart (and from mirrors)
STARTING_TREE_COUNT = 2  # per player


def _spiral_coords(rings: int) -> tuple[tuple[int, int, int], ...]:
    """Cube coordinates by cell index, in the official generator's order."""
    coords = [(0, 0, 0)]
    x, y, z = DIRECTIONS[0]
    for distance in range(1, rings + 1):
        for orientation in range(6):
            for _ in range(distance):
                coords.append((x, y, z))
                dx, dy, dz = DIRECTIONS[(orientation + 2) % 6]
                x, y, z = x + dx, y + dy, z + dz
        x, y, z = x + DIRECTIONS[0][0], y + DIRECTIONS[0][1], z + DIRECTIONS[0][2]
    return tuple(coords)


COORDS = _spiral_coords(RING_COUNT)
INDEX_OF = {coord: index for index, coord in enumerate(COORDS)}


def distance(a: int, b: int) -> int:
    """Hex distance between cells a and b."""
    (ax, ay, az), (bx, by, bz) = COORDS[a], COORDS[b]
    return (abs(ax - bx) + abs(ay - by) + abs(az - bz)) // 2


RING = tuple(distance(0, cell) for cell in range(NUM_CELLS))
BASE_RICHNESS = tuple(1 if ring == RING_COUNT else 2 if ring == RING_COUNT - 1 else 3 for ring in RING)
# NEIGHBOURS[cell][direction]: the adjacent cell, or -1 off the board.
NEIGHBOURS = tuple(
    tuple(INDEX_OF.get((x + dx, y + dy, z + dz), -1) for dx, dy, dz in DIRECTIONS) for x, y, z in COORDS
)
# SHADE_LINES[direction][cell]: the cells 1, 2, 3 steps away in `direction` that exist (nearest first).
SHADE_LINES = tuple(
    tuple(
        tuple(
            INDEX_OF[(x + dx * i, y + dy * i, z + dz * i)]
            for i in range(1, 4)
            if (x + dx * i, y + dy * i, z + dz * i) in INDEX_OF
        )
        for x, y, z in COORDS
    )
    for dx, dy, dz in DIRECTIONS
)
# WITHIN[cell][d]: the cells at distance 1..d of `cell` (d = 0..3), ascending index.
WITHIN = tuple(
    tuple(tuple(other for other in range(NUM_CELLS) if 0 < distance(cell, other) <= d) for d in range(4))
    for cell in range(NUM_CELLS)
)
MIRROR = tuple(INDEX_OF[(-x, -y, -z)] for x, y, z in COORDS)


class JavaRandom:
    """`java.util.Random`'s documented generator: a 48-bit LCG (multiplier 0x5DEECE66D, increment 11)."""

    MULTIPLIER = 0x5DEECE66D
    MASK = (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self.seed = (seed ^ self.MULTIPLIER) & self.MASK  # the constructor's scramble

    def next_bits(self, bits: int) -> int:
        """`next(bits)`: the top `bits` bits of the new seed, as a signed 32-bit int."""
        self.seed = (self.seed * self.MULTIPLIER + 0xB) & self.MASK
        value = self.seed >> (48 - bits)
        return value - (1 << 32) if value >= 1 << 31 else value

    def next_int(self, bound: int) -> int:
        """`nextInt(bound)`, 0 <= result < bound, with the power-of-two shortcut and the rejection loop."""
        if bound <= 0:
            raise ValueError("bound must be positive")
        if bound & -bound == bound:
            return (bound * self.next_bits(31)) >> 31
        while True:
            bits = self.next_bits(31)
            value = bits % bound
            if bits - value + (bound - 1) < 1 << 31:  # Java's int overflow test: no overflow
                return value


def _java_hash(coord: tuple[int, int, int]) -> int:
    """`CubeCoord.hashCode()` as a Java int, spread as `HashMap.hash` spreads it."""
    x, y, z = coord
    value = (31 * (31 * (31 + x) + y) + z) & 0xFFFFFFFF
    return value ^ (value >> 16)


def hashmap_order(coords: tuple[tuple[int, int, int], ...]) -> tuple[int, ...]:
    """The cell indices in the iteration order of a Java `HashMap` filled with `coords` in index order.

    Java iterates bucket by bucket (bucket = hash & (capacity - 1)) and, within a bucket, in
    insertion order (resizes keep it; no bucket here holds 8 keys, so none becomes a tree).
    The capacity starts at 16 and doubles whenever the size passes 3/4 of it.
    """
    capacity = 16
    while len(coords) > capacity * 3 // 4:
        capacity *= 2
    return tuple(
        sorted(range(len(coords)), key=lambda index: (_java_hash(coords[index]) & (capacity - 1), index))
    )


HASHMAP_ORDER = hashmap_order(COORDS)


def generate_map(seed: int, max_empty_cells: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(richness by cell, player 0's starting cells, player 1's starting cells) for `seed`.

    The official draws in order: the number of wanted holes, the holes (each with its point-mirror),
    then the starting trees (`_starting_cells`). A seed is used as a Java `long` (its low 64 bits).
    """
    random = JavaRandom(seed)
    richness = list(BASE_RICHNESS)
    wanted = random.next_int(max_empty_cells + 1)
    holes = 0
    while holes < wanted - 1:  # as the referee writes it: wanted - 1 or wanted holes, in mirror pairs
        cell = HASHMAP_ORDER[random.next_int(NUM_CELLS)]
        if richness[cell]:
            richness[cell] = 0
            holes += 1
            if MIRROR[cell] != cell:
                richness[MIRROR[cell]] = 0
                holes += 1
    first, second = _starting_cells(random, richness)
    return tuple(richness), first, second


def _starting_cells(random: JavaRandom, richness: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The referee's starting trees: on the outer ring, away from holes, drawn in mirrored pairs.

    One try draws STARTING_TREE_COUNT cells c from what is left, each with its mirror, and removes
    every cell within STARTING_TREE_DISTANCE of c or of its mirror; tries repeat until one yields
    them all. Player 0 gets the drawn cells, player 1 their mirrors. Like the referee, this loops
    until a try succeeds; with at most 10 holes (MAX_EMPTY_CELLS' limit) at least 8 outer cells
    remain and some try succeeds (seeds 0..19,999 never needed more than two tries).
    """
    candidates = [cell for cell in range(NUM_CELLS) if RING[cell] == RING_COUNT and richness[cell]]
    while True:
        available, drawn = list(candidates), []
        for _ in range(STARTING_TREE_COUNT):
            if not available:
                break
            cell = available[random.next_int(len(available))]
            mirror = MIRROR[cell]
            available = [
                other
                for other in available
                if distance(other, cell) > STARTING_TREE_DISTANCE
                and distance(other, mirror) > STARTING_TREE_DISTANCE
            ]
            drawn.append(cell)
        if len(drawn) == STARTING_TREE_COUNT:
            return tuple(drawn), tuple(MIRROR[cell] for cell in drawn)
