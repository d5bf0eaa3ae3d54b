-- Offline walk-in badge passes (issue 16): each edge's own walk-in badge
-- key, its public half as the edge sent it in its status, certified for
-- the edge's site once and never replaced (docs/decisions.md, "Offline
-- walk-in badge passes (issue 16)"). NULL until the edge sends one.
--
-- (0019: 0015 to 0018 are left to changes made beside this one.)
ALTER TABLE edges ADD COLUMN badge_key BLOB;
ALTER TABLE edges ADD COLUMN badge_key_at INTEGER;
