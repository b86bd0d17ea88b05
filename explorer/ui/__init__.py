"""Streamlit UI and Plotly figures: thin callers of the core."""
