"""Figures of every report page, drawn in one style (:mod:`.style`); each module draws what it
receives (an Analysis, a Study, a Correlation, a track table) and computes nothing new."""
