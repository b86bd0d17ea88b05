"""The framework floor with the Explorer's controls: the floor's title and chart, and the
Explorer's own sidebar (explorer.ui.controls, the same widgets and sections) in the same run.
benchmarks/bench_floor.py times the Explorer against it beside the plain floor: what Streamlit
costs a page that has these controls, so the part of the Explorer's time that is its own reads
apart from the part any page with this sidebar pays."""

import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from explorer.ui import controls

st.set_page_config(page_title="floor with controls", layout="wide")
controls.check_url_once()
controls.sidebar()
st.title("Framework floor")
x = np.arange(64, dtype=np.float32)
st.plotly_chart(go.Figure(go.Scatter(x=x, y=np.sqrt(x), mode="lines")), width="stretch")
