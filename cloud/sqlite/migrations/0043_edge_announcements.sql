-- Edge state events (issue 17; docs/decisions.md, "Fleet events (issue
-- 17)").
--
-- announced is the state (online or offline) the last edge.online or
-- edge.offline event said an edge was in. A state the cloud presents
-- (cloud.Edge.Presented) that differs from it is announced by one event,
-- written by a conditional update of this column in the event's
-- transaction, so several cloud processes announce each change once.
-- Edges made before it take their stored state as announced: the upgrade
-- fires nothing for what was already so.
--
-- (0043: 0041 and 0042 are left to changes made beside this one.)
ALTER TABLE edges ADD COLUMN announced TEXT NOT NULL DEFAULT 'offline';
UPDATE edges SET announced = state;
-- Store.EdgesToAnnounce reads the edges online or announced online: the
-- rest can have nothing to announce.
CREATE INDEX edges_announce ON edges (last_seen_at) WHERE state = 'online' OR announced = 'online';
