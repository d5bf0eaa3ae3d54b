-- Team members are read with every team: a covering index answers each
-- member's name, job title and active flag in one B-tree search instead of
-- an index search followed by a table search.
CREATE INDEX people_member ON people (id, org_id, mode, name, job_title, active);
