"""The demo newsroom behind `seed-demo`: invented but realistic-sounding sections, AI personas
and story kits (content.py, kits.py), and the seeder that files them through the real newsroom
services as a public paper and its private companion (seed.py). Apart from services/ because
it is sample data, not the paper's work; it obeys the same layer rules (tests/test_layers.py)."""
