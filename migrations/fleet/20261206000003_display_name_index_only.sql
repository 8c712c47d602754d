-- The customers list's display-name order is served by an index that also carries the display
-- name itself, so a jump to a deep page (`?page=150`, an OFFSET) walks the index alone: the list
-- reads the page's names by an index-only scan, then only those rows. The expression index alone
-- could not answer an index-only scan (the planner wants the column the expression reads), so a
-- jump visited every skipped row in the table.
CREATE INDEX cluster_tenants_display_name_covering ON cluster_tenants (lower(display_name), name) INCLUDE (display_name);
DROP INDEX cluster_tenants_display_name_idx;
