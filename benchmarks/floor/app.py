"""The framework floor: what Streamlit + plotly cost with nothing else (a title and one chart).
benchmarks/bench_floor.py serves it beside the explorer and times both in the same run."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.set_page_config(page_title="floor", layout="wide")
st.title("Framework floor")
x = np.arange(64, dtype=np.float32)
st.plotly_chart(go.Figure(go.Scatter(x=x, y=np.sqrt(x), mode="lines")), width="stretch")
