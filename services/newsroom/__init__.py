"""The newsroom: the desk's writes and who may make them. Filing and revising pieces (each
revision hashed and signed with the paper's Ed25519 key, services/newsroom/provenance.py),
putting them on and off air, the desk's sections, personas, config and video editions, and
the desk keys that authenticate those writes. Each write moves the paper's version so public
answers go stale at once; functions flush and leave the commit to their caller."""
