-- A ring accepted at its first try keeps that try on its firing row instead of in
-- `attempts` (docs/architecture.md, "Row writes per ring"): the firing already says when
-- (`sent_at`), on which channel and with which provider id; `sent_to` says where (the
-- destination id an attempts row would have held). NULL for every other firing, whose
-- attempts are rows of `attempts` as before. A nullable column without a default: adding
-- it rewrites nothing.
ALTER TABLE firings ADD COLUMN sent_to TEXT;
